-- v35: The outbox has an urgent lane
-- A command's reply and a halt waited behind every notice enqueued before
-- them, such as a flood of one agent's. Each notice now has a lane: 0 for
-- urgent ones, which the sender reads and sends first, 1 for the others,
-- as every notice written before this upgrade was.
ALTER TABLE outbox ADD COLUMN lane INTEGER NOT NULL DEFAULT 1;
CREATE INDEX outbox_lane_idx ON outbox (sent_at, lane, seq);
