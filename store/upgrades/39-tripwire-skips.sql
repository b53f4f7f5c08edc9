-- v39: The evaluator's skip log
-- Each evaluation the evaluator skipped (cooldown, source-error,
-- quarantine, rate-limit) with its time and, for a source error, what
-- failed; its observation is null, so it has no column. A tripwire keeps
-- its newest tripwires.skip_log.per_tripwire rows (trimmed every tenth of
-- that); they go with the tripwire when retention prunes it.
CREATE TABLE tripwire_skip (
	-- only: sqlite for next line
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq         BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tripwire_id TEXT    NOT NULL,
	at          BIGINT  NOT NULL,
	reason      TEXT    NOT NULL,
	detail      TEXT    NOT NULL
);
CREATE INDEX tripwire_skip_idx ON tripwire_skip (tripwire_id, seq);
