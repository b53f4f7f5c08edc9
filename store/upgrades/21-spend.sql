-- v21: Spend and boots from heartbeats, verdicts on sign-offs
-- What each agent spent per UTC day, metered against its daily budget,
-- with whether the day's budget warning and alert were posted; and each
-- process an agent ran, by the boot id its heartbeats carry, to tell a
-- crash loop.
CREATE TABLE agent_spend (
	agent      TEXT             NOT NULL,
	day        TEXT             NOT NULL,
	tokens_in  BIGINT           NOT NULL DEFAULT 0,
	tokens_out BIGINT           NOT NULL DEFAULT 0,
	cost       DOUBLE PRECISION NOT NULL DEFAULT 0,
	currency   TEXT             NOT NULL DEFAULT '',
	warned     BOOLEAN          NOT NULL DEFAULT false,
	alerted    BOOLEAN          NOT NULL DEFAULT false,
	PRIMARY KEY (agent, day)
);
CREATE TABLE agent_boot (
	agent   TEXT    NOT NULL,
	boot_id TEXT    NOT NULL,
	seen_at BIGINT  NOT NULL,
	restart BOOLEAN NOT NULL DEFAULT false,
	alerted BOOLEAN NOT NULL DEFAULT false,
	PRIMARY KEY (agent, boot_id)
);
CREATE INDEX agent_boot_seen_idx ON agent_boot (agent, seen_at);

-- A reviewer's sign-off says what they found (approved or
-- changes_requested) and may carry a note. Sign-offs from before this
-- version approved.
ALTER TABLE card_signoff ADD COLUMN verdict TEXT NOT NULL DEFAULT 'approved';
ALTER TABLE card_signoff ADD COLUMN note TEXT NOT NULL DEFAULT '';
