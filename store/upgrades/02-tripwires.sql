-- v2: Tripwires
-- A citizen's standing observation rules. Source and condition never
-- change after arming. Times are unix milliseconds, 0 for never.
CREATE TABLE tripwire (
	id             TEXT    PRIMARY KEY,
	scope          TEXT    NOT NULL,
	label          TEXT    NOT NULL,
	rationale      TEXT    NOT NULL,
	source_kind    TEXT    NOT NULL,
	source_param   TEXT    NOT NULL DEFAULT '',
	condition      TEXT    NOT NULL,
	action_journal BOOLEAN NOT NULL,
	action_push    BOOLEAN NOT NULL,
	created_at     BIGINT  NOT NULL,
	updated_at     BIGINT  NOT NULL
);
CREATE INDEX tripwire_scope_idx ON tripwire (scope, created_at);

-- What the evaluator reads and writes, one row per tripwire, apart from the
-- definition. rev is the revision of the last write: the evaluator keeps
-- its view in memory and reads only rows written since. A deleted
-- tripwire's row stays with status 'deleted' (its trips outlive it too).
CREATE TABLE tripwire_state (
	id                TEXT    PRIMARY KEY REFERENCES tripwire (id),
	rev               BIGINT  NOT NULL,
	status            TEXT    NOT NULL,
	cooldown_seconds  INTEGER NOT NULL,
	last_tripped_at   BIGINT  NOT NULL DEFAULT 0,
	-- JSON array of the last value of each condition leaf, kept for changed.
	last_observed     TEXT    NOT NULL DEFAULT '',
	error_streak      INTEGER NOT NULL DEFAULT 0,
	last_reset_at     BIGINT  NOT NULL DEFAULT 0,
	trip_seq          BIGINT  NOT NULL DEFAULT 0,
	trip_pushed       BOOLEAN NOT NULL DEFAULT false,
	last_error        TEXT    NOT NULL DEFAULT '',
	flap_since        BIGINT  NOT NULL DEFAULT 0,
	quarantine_reason TEXT    NOT NULL DEFAULT '',
	quarantine_count  INTEGER NOT NULL DEFAULT 0
-- only: sqlite for next line
) WITHOUT ROWID;
-- only: postgres for next line
);
CREATE INDEX tripwire_state_rev_idx ON tripwire_state (rev);

-- The revision counter. Every write to tripwire_state takes the next
-- revision by updating this one row, which also orders concurrent writers.
CREATE TABLE tripwire_rev (
	id  INTEGER PRIMARY KEY CHECK (id = 1),
	rev BIGINT  NOT NULL
);
INSERT INTO tripwire_rev (id, rev) VALUES (1, 0);

-- Trip events, immutable. The per-tripwire history (cap 100), the per-scope
-- journal (cap 200) and push queue (cap 50) each keep their copy. They
-- outlive the tripwire: no foreign key.
CREATE TABLE tripwire_history (
	-- only: sqlite for next line
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tripwire_id      TEXT    NOT NULL,
	scope            TEXT    NOT NULL,
	trip             BIGINT  NOT NULL,
	label            TEXT    NOT NULL,
	at               BIGINT  NOT NULL,
	observed_value   TEXT    NOT NULL,
	observed_context TEXT    NOT NULL,
	summary          TEXT    NOT NULL
);
CREATE INDEX tripwire_history_idx ON tripwire_history (tripwire_id, seq);

CREATE TABLE tripwire_journal (
	-- only: sqlite for next line
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tripwire_id      TEXT    NOT NULL,
	scope            TEXT    NOT NULL,
	trip             BIGINT  NOT NULL,
	label            TEXT    NOT NULL,
	at               BIGINT  NOT NULL,
	observed_value   TEXT    NOT NULL,
	observed_context TEXT    NOT NULL,
	summary          TEXT    NOT NULL
);
CREATE INDEX tripwire_journal_idx ON tripwire_journal (scope, seq);

CREATE TABLE tripwire_push (
	-- only: sqlite for next line
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tripwire_id      TEXT    NOT NULL,
	scope            TEXT    NOT NULL,
	trip             BIGINT  NOT NULL,
	label            TEXT    NOT NULL,
	at               BIGINT  NOT NULL,
	observed_value   TEXT    NOT NULL,
	observed_context TEXT    NOT NULL,
	summary          TEXT    NOT NULL
);
CREATE INDEX tripwire_push_idx ON tripwire_push (scope, seq);

-- How far each citizen has read their journal.
CREATE TABLE tripwire_journal_cursor (
	scope TEXT   PRIMARY KEY,
	seq   BIGINT NOT NULL
);

-- Creations within the rate-limit window, deleted tripwires included.
CREATE TABLE tripwire_creation (
	scope TEXT   NOT NULL,
	at    BIGINT NOT NULL
);
CREATE INDEX tripwire_creation_idx ON tripwire_creation (scope, at);

-- Personal API tokens, kept only as the SHA-256 of the token.
CREATE TABLE tripwire_token (
	id         TEXT   PRIMARY KEY,
	citizen    TEXT   NOT NULL,
	hash       TEXT   NOT NULL UNIQUE,
	label      TEXT   NOT NULL,
	created_at BIGINT NOT NULL
);
CREATE INDEX tripwire_token_citizen_idx ON tripwire_token (citizen, created_at);
