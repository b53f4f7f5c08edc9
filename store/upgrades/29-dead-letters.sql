-- v29: Notices the homeserver keeps refusing, and replies in threads
-- refusals counts the refusals in a row (a 4xx answer other than rate
-- limiting); failed_at is when the sender gave up on the notice after
-- core.MaxRefusals of them (0: it did not). A notice given up is kept,
-- with its last_error, and never tried again.
ALTER TABLE outbox ADD COLUMN refusals INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN failed_at BIGINT NOT NULL DEFAULT 0;

-- A reply to a message written in a thread goes into that thread: the
-- Matrix event ID of the thread's root ('' outside threads).
ALTER TABLE outbox ADD COLUMN thread_root TEXT NOT NULL DEFAULT '';
