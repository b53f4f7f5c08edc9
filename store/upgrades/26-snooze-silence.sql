-- v26: Snoozes and silences
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

-- Silences (`!silence`): a maintenance window that holds the alerts about
-- target (an agent, a source, or "fleet" for every fleet alert) and the
-- trips of tripwires reading it from the room and pushes; they are
-- journaled instead. scope is '' for an admin's, which holds alerts and
-- everyone's trips, or the person whose own trips it holds. It ends at
-- ends_at, or when what it silences resolves (until_resolved, ends_at then
-- the upper bound), and its end is told in room_id with what it held: the
-- counts, and held, the first lines, as written (untrusted). reason is as
-- written too. ended_at is 0 while it holds.
CREATE TABLE silence (
	-- only: sqlite for next line
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id             BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	scope          TEXT    NOT NULL,
	target         TEXT    NOT NULL,
	reason         TEXT    NOT NULL,
	set_by         TEXT    NOT NULL,
	room_id        TEXT    NOT NULL,
	started_at     BIGINT  NOT NULL,
	ends_at        BIGINT  NOT NULL,
	until_resolved BOOLEAN NOT NULL DEFAULT false,
	ended_at       BIGINT  NOT NULL DEFAULT 0,
	held_alerts    INTEGER NOT NULL DEFAULT 0,
	held_trips     INTEGER NOT NULL DEFAULT 0,
	held           TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX silence_active_idx ON silence (ends_at) WHERE ended_at = 0;
