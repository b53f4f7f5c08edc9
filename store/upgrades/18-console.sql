-- v18: Console: the operator's terminal
-- What people type in `jarvis console`, kept until the Jarvis holding the
-- workspace lease has acted on it (handled_at, with how: outcome). answers
-- is the key of the notice the line answers, when it is an answer.
CREATE TABLE console_input (
	-- only: sqlite for next line
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	user_name  TEXT    NOT NULL,
	body       TEXT    NOT NULL,
	answers    TEXT    NOT NULL DEFAULT '',
	created_at BIGINT  NOT NULL,
	handled_at BIGINT  NOT NULL DEFAULT 0,
	outcome    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX console_input_waiting_idx ON console_input (handled_at, seq);

-- How far each console user has read the outbox: a console shows what
-- arrived after its cursor, once, and when reopened what arrived while it
-- was closed.
CREATE TABLE console_cursor (
	user_name TEXT   PRIMARY KEY,
	seq       BIGINT NOT NULL,
	read_at   BIGINT NOT NULL
);
