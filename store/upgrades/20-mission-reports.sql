-- v20: Mission reports
-- The message a person published a card set with (its room and the outbox
-- key of the notice), so that what becomes of the set's cards is told in
-- that message's thread. Sets from before this version, and sets an agent
-- published over the API, have none: their reports go to the dedicated room.
ALTER TABLE card_set ADD COLUMN publish_room TEXT NOT NULL DEFAULT '';
ALTER TABLE card_set ADD COLUMN publish_notice TEXT NOT NULL DEFAULT '';
