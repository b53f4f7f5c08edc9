-- v17: Source trust on cards, filled on amendments
-- Where a card's text came from (core.Trust), copied from its drafts and
-- the account that published them. Cards from before this version that
-- Jarvis published from a person's drafts (their set's key is "draft:…")
-- were written from Matrix: native; those an agent published over the API
-- are external.
ALTER TABLE card ADD COLUMN source_trust TEXT NOT NULL DEFAULT 'native';
UPDATE card SET source_trust = 'external'
WHERE set_id NOT IN (SELECT id FROM card_set WHERE idem_key LIKE 'draft:%');
-- Version 15 added card_amendment.source_trust, but nothing wrote it:
-- agents wrote every amendment but the answers, and an answer from
-- outside Matrix came through a bridge (external, as trust was then).
UPDATE card_amendment SET source_trust = 'external'
WHERE kind <> 'answer' OR network <> 'matrix' OR author = 'main-agent';
