-- v24: On-call incidents
-- An alert Jarvis raised in its room (core/oncall), from the moment it is
-- posted until what it reported resolves: notice_key is the alert notice
-- that stands for it now, body that notice's text; owner is who claimed it
-- (👀 or `mine`), '' until someone does; escalated_at is when the admins
-- were called because nobody had. Times are Unix milliseconds, 0 when not
-- yet. The escalation sweep reads the open, unclaimed ones.
CREATE TABLE incident (
	id           TEXT   PRIMARY KEY,
	notice_key   TEXT   NOT NULL,
	room_id      TEXT   NOT NULL,
	body         TEXT   NOT NULL,
	kind         TEXT   NOT NULL,
	subject      TEXT   NOT NULL,
	opened_at    BIGINT NOT NULL,
	owner        TEXT   NOT NULL DEFAULT '',
	claimed_at   BIGINT NOT NULL DEFAULT 0,
	resolved_at  BIGINT NOT NULL DEFAULT 0,
	escalated_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX incident_open_idx ON incident (opened_at) WHERE owner = '' AND resolved_at = 0;
