-- v8: Outbox attempts in flight
-- When a send was started but its outcome never recorded (a crash mid
-- request), the sender looks for the event in the room before sending again.
ALTER TABLE outbox ADD COLUMN attempt_started BIGINT NOT NULL DEFAULT 0;
