-- v11: Conversation excerpts
-- Recent messages people wrote to Jarvis, tagged with their trust, for the
-- rationale of proposals; external instruction-shaped text is held.
CREATE TABLE excerpt (
	-- only: sqlite for next line
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	room_id     TEXT    NOT NULL,
	sender      TEXT    NOT NULL,
	event_id    TEXT    NOT NULL,
	body        TEXT    NOT NULL,
	trust       TEXT    NOT NULL,
	held        BOOLEAN NOT NULL,
	ratified_by TEXT    NOT NULL DEFAULT '',
	at          BIGINT  NOT NULL
);
CREATE INDEX excerpt_room_sender_idx ON excerpt (room_id, sender, id);
