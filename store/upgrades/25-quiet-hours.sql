-- v25: Quiet hours, daily digests and the trips they hold
-- A person's quiet hours and the time of their daily digest, in minutes
-- after midnight in their time zone (core/quiet); -1 when they set none.
ALTER TABLE person ADD COLUMN quiet_from INTEGER NOT NULL DEFAULT -1;
ALTER TABLE person ADD COLUMN quiet_to INTEGER NOT NULL DEFAULT -1;
ALTER TABLE person ADD COLUMN digest_at INTEGER NOT NULL DEFAULT -1;

-- An urgent tripwire's pushes break through its owner's quiet hours.
ALTER TABLE tripwire ADD COLUMN action_urgent BOOLEAN NOT NULL DEFAULT false;

-- Trips held for a digest: kind 'quiet' is a push held during its owner's
-- quiet hours, delivered when they end; 'daily' a journal-only trip,
-- delivered in the next daily digest. Deleted when delivered. label and
-- summary are the tripwire's, as written: untrusted.
CREATE TABLE held_push (
	-- only: sqlite for next line
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	owner       TEXT    NOT NULL,
	kind        TEXT    NOT NULL,
	tripwire_id TEXT    NOT NULL,
	trip        BIGINT  NOT NULL,
	label       TEXT    NOT NULL,
	summary     TEXT    NOT NULL,
	at          BIGINT  NOT NULL
);
CREATE INDEX held_push_owner_idx ON held_push (owner, kind, at);
