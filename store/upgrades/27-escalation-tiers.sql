-- v27: Escalation tiers and reminders of on-call incidents
-- tier is how many escalation tiers an unclaimed incident called (the
-- admins, then oncall.escalation in order), escalated_at when it called
-- the last; reminded_at is when the owner of a claimed one was last
-- reminded that it is still open (Unix milliseconds, 0 when not yet). The
-- reminder sweep reads the open, claimed ones.
ALTER TABLE incident ADD COLUMN tier INTEGER NOT NULL DEFAULT 0;
ALTER TABLE incident ADD COLUMN reminded_at BIGINT NOT NULL DEFAULT 0;
UPDATE incident SET tier = 1 WHERE escalated_at > 0;
CREATE INDEX incident_claimed_idx ON incident (claimed_at) WHERE owner <> '' AND resolved_at = 0;
