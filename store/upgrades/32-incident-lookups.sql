-- v32: Open incidents looked up by subject, the recent ones of a kind, and held alerts
-- The wake router finds the open incident of a condition (kind, subject)
-- at every alert and every all-clear; the fleet watcher finds the alerts
-- of a kind opened within fleet.group_window that a new silence may be
-- grouped with. Both lead with kind, so they also serve the watcher's
-- look-up of a kind's open incidents, which the index they replace did.
DROP INDEX incident_kind_open_idx;
CREATE INDEX incident_subject_open_idx ON incident (kind, subject, opened_at) WHERE resolved_at = 0;
CREATE INDEX incident_recent_open_idx ON incident (kind, opened_at) WHERE resolved_at = 0 AND parent = '';

-- The alert a silence holds from the room: its outbox key and mentions (a
-- JSON array; body holds its text), for posting it when the silence ends
-- with the incident still open. '' when none is held.
ALTER TABLE incident ADD COLUMN held_key TEXT NOT NULL DEFAULT '';
ALTER TABLE incident ADD COLUMN held_mentions TEXT NOT NULL DEFAULT '[]';
