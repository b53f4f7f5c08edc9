-- v22: Reminders and people's time zones
-- A person's reminders (core/reminder): due_at is the next delivery, at_time
-- the time first set, whose wall-clock time in zone repeats every day or
-- week (every_unit); deliveries numbers the notices sent for it.
CREATE TABLE reminder (
	-- only: sqlite for next line
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id         BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	owner      TEXT    NOT NULL,
	body       TEXT    NOT NULL,
	due_at     BIGINT  NOT NULL,
	at_time    BIGINT  NOT NULL,
	every_unit TEXT    NOT NULL DEFAULT '',
	zone       TEXT    NOT NULL DEFAULT '',
	status     TEXT    NOT NULL DEFAULT 'waiting',
	deliveries INTEGER NOT NULL DEFAULT 0,
	created_at BIGINT  NOT NULL
);
CREATE INDEX reminder_due_idx ON reminder (status, due_at);
CREATE INDEX reminder_owner_idx ON reminder (owner, status);

-- What a person set about themselves: their time zone (IANA name; empty
-- is the configured default).
CREATE TABLE person (
	user_id   TEXT PRIMARY KEY,
	time_zone TEXT NOT NULL DEFAULT ''
);
