-- v15: Source trust
-- Where a tripwire's rationale, a card draft and an amendment came from
-- (core.Trust): external as soon as any part of them came through a
-- bridge or an outside payload. Rows from before this version were
-- written from Matrix or by agents whose text was not tagged: native.
ALTER TABLE tripwire ADD COLUMN source_trust TEXT NOT NULL DEFAULT 'native';
ALTER TABLE card_draft ADD COLUMN source_trust TEXT NOT NULL DEFAULT 'native';
ALTER TABLE card_amendment ADD COLUMN source_trust TEXT NOT NULL DEFAULT 'native';
