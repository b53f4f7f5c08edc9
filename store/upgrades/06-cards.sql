-- v6: Cards
-- A card set published under a client's idempotency key. card_count is the
-- number of cards the set holds; the set and its cards are written in one
-- transaction, so a stored set always has exactly that many.
CREATE TABLE card_set (
	id           TEXT    PRIMARY KEY,
	idem_key     TEXT    NOT NULL UNIQUE,
	fingerprint  TEXT    NOT NULL,
	author       TEXT    NOT NULL,
	ratified_by  TEXT    NOT NULL DEFAULT '',
	card_count   INTEGER NOT NULL,
	published_at BIGINT  NOT NULL
);

-- A backlog card. The spec columns (goal, acceptance, spec_priority,
-- depends_on, budget) are written once and never updated; changes arrive
-- as amendments. priority is the current class.
CREATE TABLE card (
	id                TEXT    PRIMARY KEY,
	set_id            TEXT    NOT NULL REFERENCES card_set (id),
	position          INTEGER NOT NULL,
	ref               TEXT    NOT NULL DEFAULT '',
	goal              TEXT    NOT NULL,
	acceptance        TEXT    NOT NULL,
	spec_priority     TEXT    NOT NULL,
	depends_on        TEXT    NOT NULL DEFAULT '[]',
	budget            TEXT    NOT NULL DEFAULT '',
	author            TEXT    NOT NULL,
	ratified_by       TEXT    NOT NULL DEFAULT '',
	ratified_revision INTEGER NOT NULL DEFAULT 0,
	priority          TEXT    NOT NULL,
	state             TEXT    NOT NULL,
	state_note        TEXT    NOT NULL DEFAULT '',
	revision          INTEGER NOT NULL,
	created_at        BIGINT  NOT NULL,
	updated_at        BIGINT  NOT NULL,
	UNIQUE (set_id, position)
);
CREATE INDEX card_state_idx ON card (state, priority, created_at);

-- Amendments of a card, one per revision after the first.
CREATE TABLE card_amendment (
	card_id     TEXT    NOT NULL REFERENCES card (id),
	revision    INTEGER NOT NULL,
	kind        TEXT    NOT NULL,
	text        TEXT    NOT NULL,
	priority    TEXT    NOT NULL DEFAULT '',
	acceptance  TEXT    NOT NULL DEFAULT '[]',
	decision_id TEXT    NOT NULL DEFAULT '',
	option_no   INTEGER NOT NULL DEFAULT 0,
	elapsed_ms  BIGINT  NOT NULL DEFAULT 0,
	author      TEXT    NOT NULL,
	network     TEXT    NOT NULL DEFAULT '',
	created_at  BIGINT  NOT NULL,
	PRIMARY KEY (card_id, revision)
);

-- Reviewer sign-offs, each pinned to the revision the reviewer signed.
CREATE TABLE card_signoff (
	card_id         TEXT    NOT NULL REFERENCES card (id),
	reviewer        TEXT    NOT NULL,
	signed_revision INTEGER NOT NULL,
	signed_at       BIGINT  NOT NULL,
	PRIMARY KEY (card_id, reviewer)
);

-- Workers' questions (needs-decision) and what became of them.
CREATE TABLE card_decision (
	id                TEXT    PRIMARY KEY,
	card_id           TEXT    NOT NULL REFERENCES card (id),
	question          TEXT    NOT NULL,
	options           TEXT    NOT NULL,
	checkpoint_branch TEXT    NOT NULL,
	checkpoint_note   TEXT    NOT NULL,
	deadline          BIGINT  NOT NULL DEFAULT 0,
	default_option    INTEGER NOT NULL DEFAULT 0,
	asked             TEXT    NOT NULL DEFAULT '[]',
	status            TEXT    NOT NULL,
	option_no         INTEGER NOT NULL DEFAULT 0,
	answered_by       TEXT    NOT NULL DEFAULT '',
	network           TEXT    NOT NULL DEFAULT '',
	asked_at          BIGINT  NOT NULL,
	remind_at         BIGINT  NOT NULL DEFAULT 0,
	reminded_at       BIGINT  NOT NULL DEFAULT 0,
	closed_at         BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX card_decision_card_idx ON card_decision (card_id, asked_at);
CREATE INDEX card_decision_due_idx ON card_decision (status, deadline);
-- A card has at most one open question.
CREATE UNIQUE INDEX card_decision_open_idx ON card_decision (card_id) WHERE status = 'open';

-- The priority budget ledger: one charge per card published in, or raised
-- to, a class that has a budget.
CREATE TABLE card_budget_charge (
	priority   TEXT   NOT NULL,
	card_id    TEXT   NOT NULL REFERENCES card (id),
	charged_at BIGINT NOT NULL
);
CREATE INDEX card_budget_charge_idx ON card_budget_charge (priority, charged_at);

-- Each person's draft cards, published together as one set.
CREATE TABLE card_draft (
	person     TEXT    NOT NULL,
	ref        TEXT    NOT NULL,
	draft_id   TEXT    NOT NULL,
	seq        INTEGER NOT NULL,
	goal       TEXT    NOT NULL,
	acceptance TEXT    NOT NULL,
	priority   TEXT    NOT NULL,
	depends_on TEXT    NOT NULL DEFAULT '[]',
	budget     TEXT    NOT NULL DEFAULT '',
	added_at   BIGINT  NOT NULL,
	PRIMARY KEY (person, ref)
);
