-- v38: Notices an agent's report caused on a Jarvis that does not hold the lease
-- On PostgreSQL every Jarvis stores what agents report, lease or not, but
-- only the lease holder writes the outbox. A notice that such a report
-- causes on another Jarvis (a failure alert, a relayed approval request,
-- a halt) is kept here, in the order it was written, until the holder
-- moves it into the outbox, in one transaction that deletes it here.
-- key is the notice's outbox key, unique across both tables; notice is
-- the notice as JSON; created_at is Unix milliseconds.
CREATE TABLE staged_notice (
	-- only: sqlite for next line
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	key        TEXT    NOT NULL UNIQUE,
	notice     TEXT    NOT NULL,
	created_at BIGINT  NOT NULL
);
