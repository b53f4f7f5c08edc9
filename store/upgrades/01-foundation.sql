-- v1: Foundation: bot state, handled events, outbox, direct rooms
CREATE TABLE bot_state (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);

-- Every Matrix event Jarvis acted on, so that a redelivered event after a
-- crash or restart is never acted on twice.
CREATE TABLE handled_event (
	event_id   TEXT PRIMARY KEY,
	handled_at BIGINT NOT NULL
);

-- The durable outbox: every message Jarvis sends is written here first, in
-- the same transaction as the change that caused it.
CREATE TABLE outbox (
	-- only: sqlite for next line
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	key          TEXT    NOT NULL UNIQUE,
	room_id      TEXT    NOT NULL DEFAULT '',
	to_user      TEXT    NOT NULL DEFAULT '',
	kind         TEXT    NOT NULL,
	body         TEXT    NOT NULL,
	mentions     TEXT    NOT NULL DEFAULT '[]',
	target_key   TEXT    NOT NULL DEFAULT '',
	target_event TEXT    NOT NULL DEFAULT '',
	thread       BOOLEAN NOT NULL DEFAULT false,
	coalesce     BOOLEAN NOT NULL DEFAULT false,
	-- batch_key groups coalesced notices; it is the transaction id of the
	-- one Matrix event that carries them, fixed before the first attempt.
	batch_key    TEXT    NOT NULL DEFAULT '',
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_attempt BIGINT  NOT NULL DEFAULT 0,
	last_error   TEXT    NOT NULL DEFAULT '',
	event_id     TEXT    NOT NULL DEFAULT '',
	created_at   BIGINT  NOT NULL,
	sent_at      BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX outbox_pending_idx ON outbox (sent_at, seq);
CREATE INDEX outbox_event_idx ON outbox (event_id);

-- The direct room Jarvis shares with each person.
CREATE TABLE direct_room (
	user_id TEXT PRIMARY KEY,
	room_id TEXT NOT NULL
);
