-- v12: API credentials per agent and per role, seen attestation signatures, card workers
-- A bearer token of the HTTP API, kept as the hex SHA-256 of the token; an
-- agent credential also keeps the key that verifies its attestations
-- (HMAC-SHA256 of the token), never the token.
CREATE TABLE api_credential (
	id           TEXT PRIMARY KEY,
	role         TEXT   NOT NULL,
	agent        TEXT   NOT NULL DEFAULT '',
	hash         TEXT   NOT NULL UNIQUE,
	signing_key  TEXT   NOT NULL DEFAULT '',
	created_at   BIGINT NOT NULL,
	last_used_at BIGINT NOT NULL DEFAULT 0
);

-- Every attestation signature accepted, so that none is accepted twice.
CREATE TABLE attestation_signature (
	signature  TEXT PRIMARY KEY,
	subject_id TEXT   NOT NULL,
	agent      TEXT   NOT NULL,
	seen_at    BIGINT NOT NULL
);

-- The agent that claimed a card and works it; '' while nobody does. Only
-- it may move the card or ask about it.
ALTER TABLE card ADD COLUMN worker TEXT NOT NULL DEFAULT '';
