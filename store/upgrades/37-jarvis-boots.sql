-- v37: Jarvis's own boots, to tell its restarts and a crash loop; the cards an agent works
-- Each start of Jarvis is a row with its boot id; a clean stop marks it.
-- Boots that ended without a clean stop, within watchdog.crash_loop.window
-- of the newest, are a crash loop, announced in the room once Jarvis is
-- up again.
CREATE TABLE jarvis_boot (
	id         TEXT   PRIMARY KEY,
	host       TEXT   NOT NULL,
	version    TEXT   NOT NULL,
	started_at BIGINT NOT NULL,
	stopped_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX jarvis_boot_started_idx ON jarvis_boot (started_at);

-- The cards an agent works, read once per batch of heartbeats for their
-- answers: a person's NO-GO or amendment reaches the worker there.
CREATE INDEX card_worker_idx ON card (worker, updated_at);
