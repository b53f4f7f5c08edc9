-- v16: Source history
-- What the tripwire evaluator read from each source, for charts and
-- backtests. Each source gets a small id so that a reading row carries no
-- kind or param text.
CREATE TABLE history_source (
	-- only: sqlite for next line
	id    INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id    BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	kind  TEXT NOT NULL,
	param TEXT NOT NULL,
	UNIQUE (kind, param)
);

-- A reading (bucket false): num holds a number, val the JSON of a string or
-- boolean. Older than two days, the readings of each 5 minutes become one
-- bucket row (bucket true) at the bucket's start: num or val its last
-- value, min and max its extremes when its values are numbers (NULL where
-- an extreme is the last value).
CREATE TABLE source_reading (
	source_id BIGINT  NOT NULL REFERENCES history_source (id),
	at        BIGINT  NOT NULL,
	num       DOUBLE PRECISION,
	val       TEXT,
	bucket    BOOLEAN NOT NULL DEFAULT false,
	min       DOUBLE PRECISION,
	max       DOUBLE PRECISION,
	PRIMARY KEY (source_id, at)
-- only: sqlite for next line
) WITHOUT ROWID;
-- only: postgres for next line
);
