-- v41: The model turns not yet answered
-- A chat message the language model answers is recorded here in the
-- transaction that marks it handled, and deleted in the one that queues
-- its answer: the lease holder resumes what a crash or a restart cut
-- short, so that every message is answered once.
CREATE TABLE model_turn (
	event_id   TEXT   PRIMARY KEY,
	room_id    TEXT   NOT NULL,
	sender     TEXT   NOT NULL,
	message    TEXT   NOT NULL,
	started_at BIGINT NOT NULL
);
