-- v34: Each journal entry keeps its size
-- An agent's journal is bounded (fleet.journal): entries and bytes per
-- cycle, bytes per agent. Each entry keeps its size in bytes (title,
-- content, signature and evidence, and at least 1 KiB, what its row and
-- index entries cost whatever its text), and one index holds it beside the
-- cycle's arrival order, so that counting what a cycle or an agent holds
-- and reading a cycle page by page never read the entries' text.
ALTER TABLE agent_journal ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
-- only: sqlite for next line
UPDATE agent_journal SET size = MAX(1024, length(CAST(title AS BLOB)) + length(CAST(content AS BLOB)) + length(CAST(content_signature AS BLOB)) + length(CAST(evidence AS BLOB)));
-- only: postgres for next line
UPDATE agent_journal SET size = GREATEST(1024, octet_length(title) + octet_length(content) + octet_length(content_signature) + octet_length(evidence));
CREATE INDEX agent_journal_cycle_idx ON agent_journal (agent, cycle, received_at, entry_id, size);
