-- v7: Pending confirmations
-- Things Jarvis asked a person to confirm in chat (tripwire proposals,
-- !sys restart, card sets to publish), keyed by the notice that asked.
CREATE TABLE pending_action (
	key         TEXT PRIMARY KEY,
	kind        TEXT   NOT NULL,
	room_id     TEXT   NOT NULL,
	requester   TEXT   NOT NULL,
	payload     TEXT   NOT NULL DEFAULT '',
	created_at  BIGINT NOT NULL,
	expires_at  BIGINT NOT NULL,
	resolved_at BIGINT NOT NULL DEFAULT 0,
	resolution  TEXT   NOT NULL DEFAULT ''
);
CREATE INDEX pending_action_room_idx ON pending_action (room_id, resolved_at);
