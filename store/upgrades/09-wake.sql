-- v9: Event/wake router
-- What the router last told people about each condition, so that it wakes
-- on change only and a restart does not notify again.
CREATE TABLE wake_state (
	key         TEXT PRIMARY KEY,
	fingerprint TEXT    NOT NULL,
	notified_at BIGINT  NOT NULL,
	active      BOOLEAN NOT NULL,
	count       INTEGER NOT NULL
);

-- Source events the router acted on, each at most once.
CREATE TABLE consumed_event (
	source      TEXT   NOT NULL,
	event_id    TEXT   NOT NULL,
	consumed_at BIGINT NOT NULL,
	PRIMARY KEY (source, event_id)
);
