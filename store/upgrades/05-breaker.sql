-- v5: Circuit breaker
-- One row per agent ever halted; an agent without a row is closed. version
-- counts transitions and every write compares it (compare-and-swap).
CREATE TABLE breaker (
	agent    TEXT   PRIMARY KEY,
	state    TEXT   NOT NULL,
	event_id TEXT   NOT NULL,
	since    BIGINT NOT NULL,
	version  BIGINT NOT NULL
);
CREATE INDEX breaker_state_idx ON breaker (state, since);

-- Every halt: why it was opened and how it ended.
CREATE TABLE breaker_event (
	-- seq keeps the order events were opened in, even within a millisecond.
	-- only: sqlite for next line
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id          TEXT   NOT NULL UNIQUE,
	agent       TEXT   NOT NULL,
	opened_at   BIGINT NOT NULL,
	severity    TEXT   NOT NULL,
	reason      TEXT   NOT NULL,
	evidence    TEXT   NOT NULL DEFAULT '[]',
	opened_by   TEXT   NOT NULL,
	previous_id TEXT   NOT NULL DEFAULT '',
	reviewed_by TEXT   NOT NULL DEFAULT '',
	reviewed_at BIGINT NOT NULL DEFAULT 0,
	resolved_at BIGINT NOT NULL DEFAULT 0,
	resolved_by TEXT   NOT NULL DEFAULT '',
	resolution  TEXT   NOT NULL DEFAULT '',
	next_id     TEXT   NOT NULL DEFAULT ''
);
CREATE INDEX breaker_event_agent_idx ON breaker_event (agent, seq);

-- The audit trail: one row per transition, written in the same transaction.
CREATE TABLE breaker_audit (
	-- only: sqlite for next line
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	agent      TEXT    NOT NULL,
	event_id   TEXT    NOT NULL REFERENCES breaker_event (id),
	action     TEXT    NOT NULL,
	from_state TEXT    NOT NULL,
	to_state   TEXT    NOT NULL,
	actor      TEXT    NOT NULL,
	why        TEXT    NOT NULL DEFAULT '',
	at         BIGINT  NOT NULL
);
CREATE INDEX breaker_audit_event_idx ON breaker_audit (event_id, seq);
