-- v30: A retried heartbeat's spend counts once
-- Which heartbeat's spend the agent's day was last charged with (a hash of
-- its cycle, timestamp, boot id and spend), so that the same heartbeat
-- sent again is stored again but not charged again; '' before any.
ALTER TABLE fleet_agent ADD COLUMN metered TEXT NOT NULL DEFAULT '';
