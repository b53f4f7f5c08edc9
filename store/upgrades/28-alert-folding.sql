-- v28: Folded and grouped alerts
-- An incident folded into another (an agent silent while one it depends on
-- is down) or grouped with others of its kind (several agents late within
-- fleet.group_window) names the incident whose alert stands for it; it has
-- no alert of its own. '' for an incident with its own alert.
ALTER TABLE incident ADD COLUMN parent TEXT NOT NULL DEFAULT '';
CREATE INDEX incident_parent_idx ON incident (parent) WHERE parent <> '';

-- When an agent whose silence was folded into another's incident is given
-- its own alert again, if still silent: the incident it was folded into
-- resolved, and it gets one cadence from then to report. Unix
-- milliseconds, 0 for none.
ALTER TABLE fleet_agent ADD COLUMN grace_until BIGINT NOT NULL DEFAULT 0;

-- The watcher looks up the open incidents of a kind (crash loops, budgets)
-- at every sweep to tell when they ended.
CREATE INDEX incident_kind_open_idx ON incident (kind) WHERE resolved_at = 0;
