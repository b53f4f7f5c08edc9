-- v13: Retention
-- When a tripwire was deleted, so that the retention pass drops its
-- definition once retention.deleted has passed (its trips stay). Tripwires
-- deleted before this version count as deleted now.
ALTER TABLE tripwire_state ADD COLUMN deleted_at BIGINT NOT NULL DEFAULT 0;
-- only: sqlite for next line
UPDATE tripwire_state SET deleted_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000 WHERE status = 'deleted';
-- only: postgres for next line
UPDATE tripwire_state SET deleted_at = CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT) WHERE status = 'deleted';

-- What the retention pass looks rows up by.
CREATE INDEX outbox_target_idx ON outbox (target_key);
CREATE INDEX handled_event_at_idx ON handled_event (handled_at);
CREATE INDEX pending_action_done_idx ON pending_action (resolved_at, expires_at);
CREATE INDEX link_code_expires_idx ON link_code (expires_at);
CREATE INDEX agent_journal_received_idx ON agent_journal (received_at);
CREATE INDEX tripwire_state_deleted_idx ON tripwire_state (status, deleted_at);
