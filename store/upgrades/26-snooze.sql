-- v26: Snoozes
-- An incident snoozed with 💤 (or a reply `snooze 4h`) by snoozed_by at
-- snoozed_at: nobody is called to it until snoozed_until, when one reply
-- in its thread says it is back and snoozed_until goes back to 0.
ALTER TABLE incident ADD COLUMN snoozed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE incident ADD COLUMN snoozed_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE incident ADD COLUMN snoozed_until BIGINT NOT NULL DEFAULT 0;
CREATE INDEX incident_snoozed_idx ON incident (snoozed_until) WHERE snoozed_until > 0 AND resolved_at = 0;

-- A tripwire whose owner snoozed its push: its trips until snoozed_until
-- are journaled, not pushed. Unix milliseconds, 0 when not snoozed.
ALTER TABLE tripwire_state ADD COLUMN snoozed_until BIGINT NOT NULL DEFAULT 0;
