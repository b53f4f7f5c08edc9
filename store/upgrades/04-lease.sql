-- v4: Workspace lease
-- Exactly one Jarvis works for a workspace at a time: the one whose epoch
-- is in this row and whose lease has not expired. The row is never
-- deleted, so epochs only ever grow and a stale epoch is never reused.
CREATE TABLE workspace_lease (
	workspace_id TEXT   PRIMARY KEY,
	holder       TEXT   NOT NULL,
	epoch        BIGINT NOT NULL,
	acquired_at  BIGINT NOT NULL,
	expires_at   BIGINT NOT NULL
);
