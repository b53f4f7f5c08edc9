-- v33: A console reads the outbox in commit order on PostgreSQL
-- On PostgreSQL a notice's seq is drawn when it is inserted, not when its
-- transaction commits: a notice committed after one with a higher seq was
-- skipped by a console whose cursor had passed it. Each notice now keeps
-- the transaction that wrote it, and a console's cursor is the oldest
-- transaction still running when it last read (pg_snapshot_xmin): every
-- notice of an older transaction was read then. Cursors kept before this
-- upgrade counted seqs; they move to now, so a console closed across the
-- upgrade does not list what came while it was closed. SQLite has one
-- writer at a time, whose notices commit in seq order, and keeps its seqs.
-- only: postgres for next 4 lines
ALTER TABLE outbox ADD COLUMN txn xid8 NOT NULL DEFAULT '1';
ALTER TABLE outbox ALTER COLUMN txn SET DEFAULT pg_current_xact_id();
CREATE INDEX outbox_txn_idx ON outbox (txn);
UPDATE console_cursor SET seq = pg_snapshot_xmin(pg_current_snapshot())::text::bigint;
