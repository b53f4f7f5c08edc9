-- v0 -> v41 (compatible with v41+): Latest revision
-- The schema that the numbered files 01 to 41 build, in one step, for an
-- empty database; a database at version 1 or later goes on from its
-- version through the numbered files instead. A change to the schema is a
-- new numbered file and the same change here (and in the version above):
-- TestLatestSchemaMatchesNumberedUpgrades builds a database each way and
-- compares them. Columns stand in the order the upgrades added them.

-- Foundation: bot state, handled events, outbox, direct rooms (v1)
CREATE TABLE bot_state (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);

-- Every Matrix event Jarvis acted on, so that a redelivered event after a
-- crash or restart is never acted on twice.
CREATE TABLE handled_event (
	event_id   TEXT PRIMARY KEY,
	handled_at BIGINT NOT NULL
);
CREATE INDEX handled_event_at_idx ON handled_event (handled_at);

-- The durable outbox: every message Jarvis sends is written here first, in
-- the same transaction as the change that caused it.
CREATE TABLE outbox (
	-- only: sqlite for next line
	seq             INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq             BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	key             TEXT    NOT NULL UNIQUE,
	room_id         TEXT    NOT NULL DEFAULT '',
	to_user         TEXT    NOT NULL DEFAULT '',
	kind            TEXT    NOT NULL,
	body            TEXT    NOT NULL,
	mentions        TEXT    NOT NULL DEFAULT '[]',
	target_key      TEXT    NOT NULL DEFAULT '',
	target_event    TEXT    NOT NULL DEFAULT '',
	thread          BOOLEAN NOT NULL DEFAULT false,
	coalesce        BOOLEAN NOT NULL DEFAULT false,
	-- batch_key groups coalesced notices; it is the transaction id of the
	-- one Matrix event that carries them, fixed before the first attempt.
	batch_key       TEXT    NOT NULL DEFAULT '',
	attempts        INTEGER NOT NULL DEFAULT 0,
	next_attempt    BIGINT  NOT NULL DEFAULT 0,
	last_error      TEXT    NOT NULL DEFAULT '',
	event_id        TEXT    NOT NULL DEFAULT '',
	created_at      BIGINT  NOT NULL,
	sent_at         BIGINT  NOT NULL DEFAULT 0,
	-- When a send was started but its outcome never recorded (a crash mid
	-- request), the sender looks for the event in the room before sending
	-- again.
	attempt_started BIGINT  NOT NULL DEFAULT 0,
	-- refusals counts the refusals in a row (a 4xx answer other than rate
	-- limiting); failed_at is when the sender gave up on the notice after
	-- core.MaxRefusals of them (0: it did not). A notice given up is kept,
	-- with its last_error, and never tried again.
	refusals        INTEGER NOT NULL DEFAULT 0,
	failed_at       BIGINT  NOT NULL DEFAULT 0,
	-- A reply to a message written in a thread goes into that thread: the
	-- Matrix event ID of the thread's root ('' outside threads).
	thread_root     TEXT    NOT NULL DEFAULT '',
	-- On PostgreSQL a notice's seq is drawn when it is inserted, not when
	-- its transaction commits, so each notice keeps the transaction that
	-- wrote it, and a console's cursor is the oldest transaction still
	-- running when it last read (pg_snapshot_xmin). SQLite has one writer at
	-- a time, whose notices commit in seq order, and reads by seq.
	-- only: postgres for next line
	txn             xid8    NOT NULL DEFAULT pg_current_xact_id(),
	-- The lane: 0 for urgent notices (a command's reply, a halt), which
	-- the sender sends before the others (1), so that they never wait
	-- behind a flood.
	lane            INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX outbox_pending_idx ON outbox (sent_at, seq);
CREATE INDEX outbox_lane_idx ON outbox (sent_at, lane, seq);
CREATE INDEX outbox_event_idx ON outbox (event_id);
CREATE INDEX outbox_target_idx ON outbox (target_key);
-- only: postgres for next line
CREATE INDEX outbox_txn_idx ON outbox (txn);

-- The direct room Jarvis shares with each person.
CREATE TABLE direct_room (
	user_id TEXT PRIMARY KEY,
	room_id TEXT NOT NULL
);

-- Tripwires (v2)
-- A citizen's standing observation rules. Source and condition never
-- change after arming. Times are unix milliseconds, 0 for never.
-- source_trust is where the rationale came from (core.Trust). An urgent
-- tripwire's pushes break through its owner's quiet hours.
CREATE TABLE tripwire (
	id             TEXT    PRIMARY KEY,
	scope          TEXT    NOT NULL,
	label          TEXT    NOT NULL,
	rationale      TEXT    NOT NULL,
	source_kind    TEXT    NOT NULL,
	source_param   TEXT    NOT NULL DEFAULT '',
	condition      TEXT    NOT NULL,
	action_journal BOOLEAN NOT NULL,
	action_push    BOOLEAN NOT NULL,
	created_at     BIGINT  NOT NULL,
	updated_at     BIGINT  NOT NULL,
	source_trust   TEXT    NOT NULL DEFAULT 'native',
	action_urgent  BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX tripwire_scope_idx ON tripwire (scope, created_at);

-- What the evaluator reads and writes, one row per tripwire, apart from the
-- definition. rev is the revision of the last write: the evaluator keeps
-- its view in memory and reads only rows written since. A deleted
-- tripwire's row stays with status 'deleted' (its trips outlive it too);
-- deleted_at is when, so that the retention pass drops its definition once
-- retention.deleted has passed. A tripwire whose owner snoozed its push
-- journals its trips until snoozed_until instead of pushing them (0 when
-- not snoozed).
CREATE TABLE tripwire_state (
	id                TEXT    PRIMARY KEY REFERENCES tripwire (id),
	rev               BIGINT  NOT NULL,
	status            TEXT    NOT NULL,
	cooldown_seconds  INTEGER NOT NULL,
	last_tripped_at   BIGINT  NOT NULL DEFAULT 0,
	-- JSON array of the last value of each condition leaf, kept for changed.
	last_observed     TEXT    NOT NULL DEFAULT '',
	error_streak      INTEGER NOT NULL DEFAULT 0,
	last_reset_at     BIGINT  NOT NULL DEFAULT 0,
	trip_seq          BIGINT  NOT NULL DEFAULT 0,
	trip_pushed       BOOLEAN NOT NULL DEFAULT false,
	last_error        TEXT    NOT NULL DEFAULT '',
	flap_since        BIGINT  NOT NULL DEFAULT 0,
	quarantine_reason TEXT    NOT NULL DEFAULT '',
	quarantine_count  INTEGER NOT NULL DEFAULT 0,
	deleted_at        BIGINT  NOT NULL DEFAULT 0,
	snoozed_until     BIGINT  NOT NULL DEFAULT 0
-- only: sqlite for next line
) WITHOUT ROWID;
-- only: postgres for next line
);
CREATE INDEX tripwire_state_rev_idx ON tripwire_state (rev);
CREATE INDEX tripwire_state_deleted_idx ON tripwire_state (status, deleted_at);

-- The revision counter. Every write to tripwire_state takes the next
-- revision by updating this one row, which also orders concurrent writers.
CREATE TABLE tripwire_rev (
	id  INTEGER PRIMARY KEY CHECK (id = 1),
	rev BIGINT  NOT NULL
);
INSERT INTO tripwire_rev (id, rev) VALUES (1, 0);

-- Trip events, immutable. The per-tripwire history (cap 100), the per-scope
-- journal (cap 200) and push queue (cap 50) each keep their copy. They
-- outlive the tripwire: no foreign key.
CREATE TABLE tripwire_history (
	-- only: sqlite for next line
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tripwire_id      TEXT    NOT NULL,
	scope            TEXT    NOT NULL,
	trip             BIGINT  NOT NULL,
	label            TEXT    NOT NULL,
	at               BIGINT  NOT NULL,
	observed_value   TEXT    NOT NULL,
	observed_context TEXT    NOT NULL,
	summary          TEXT    NOT NULL
);
CREATE INDEX tripwire_history_idx ON tripwire_history (tripwire_id, seq);

CREATE TABLE tripwire_journal (
	-- only: sqlite for next line
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tripwire_id      TEXT    NOT NULL,
	scope            TEXT    NOT NULL,
	trip             BIGINT  NOT NULL,
	label            TEXT    NOT NULL,
	at               BIGINT  NOT NULL,
	observed_value   TEXT    NOT NULL,
	observed_context TEXT    NOT NULL,
	summary          TEXT    NOT NULL
);
CREATE INDEX tripwire_journal_idx ON tripwire_journal (scope, seq);

CREATE TABLE tripwire_push (
	-- only: sqlite for next line
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tripwire_id      TEXT    NOT NULL,
	scope            TEXT    NOT NULL,
	trip             BIGINT  NOT NULL,
	label            TEXT    NOT NULL,
	at               BIGINT  NOT NULL,
	observed_value   TEXT    NOT NULL,
	observed_context TEXT    NOT NULL,
	summary          TEXT    NOT NULL
);
CREATE INDEX tripwire_push_idx ON tripwire_push (scope, seq);

-- How far each citizen has read their journal.
CREATE TABLE tripwire_journal_cursor (
	scope TEXT   PRIMARY KEY,
	seq   BIGINT NOT NULL
);

-- Creations within the rate-limit window, deleted tripwires included.
CREATE TABLE tripwire_creation (
	scope TEXT   NOT NULL,
	at    BIGINT NOT NULL
);
CREATE INDEX tripwire_creation_idx ON tripwire_creation (scope, at);

-- Personal API tokens, kept only as the SHA-256 of the token.
CREATE TABLE tripwire_token (
	id         TEXT   PRIMARY KEY,
	citizen    TEXT   NOT NULL,
	hash       TEXT   NOT NULL UNIQUE,
	label      TEXT   NOT NULL,
	created_at BIGINT NOT NULL
);
CREATE INDEX tripwire_token_citizen_idx ON tripwire_token (citizen, created_at);

-- Fleet (v3)
-- One heartbeat per agent and cycle; a resubmission replaces it but keeps
-- first_received_at, which tells a cycle's first heartbeat from a repeat.
-- The key leads with the cycle so that a cycle's heartbeats, which arrive
-- together, land on neighbouring pages.
CREATE TABLE agent_heartbeat (
	agent             TEXT             NOT NULL,
	cycle             TEXT             NOT NULL,
	sent_at           BIGINT           NOT NULL,
	first_received_at BIGINT           NOT NULL,
	received_at       BIGINT           NOT NULL,
	mii               DOUBLE PRECISION NOT NULL,
	mode              TEXT             NOT NULL,
	notes             TEXT             NOT NULL DEFAULT '',
	PRIMARY KEY (cycle, agent)
);

-- Each agent's reporting state: its latest heartbeat, its on-time streak,
-- and what the room was last told about it (announced: '', 'alert',
-- 'offline'), so that a restart does not announce anything twice.
CREATE TABLE fleet_agent (
	agent            TEXT PRIMARY KEY,
	cycle            TEXT             NOT NULL,
	last_at          BIGINT           NOT NULL,
	next_expected_by BIGINT           NOT NULL,
	streak           INTEGER          NOT NULL,
	mii              DOUBLE PRECISION NOT NULL,
	mode             TEXT             NOT NULL,
	notes            TEXT             NOT NULL DEFAULT '',
	announced        TEXT             NOT NULL DEFAULT '',
	incident         INTEGER          NOT NULL DEFAULT 0,
	-- When an agent whose silence was folded into another's incident is
	-- given its own alert again, if still silent: the incident it was
	-- folded into resolved, and it gets one cadence from then to report.
	-- Unix milliseconds, 0 for none.
	grace_until      BIGINT           NOT NULL DEFAULT 0,
	-- Which heartbeat's spend the agent's day was last charged with (a hash
	-- of its cycle, timestamp, boot id and spend), so that the same
	-- heartbeat sent again is stored again but not charged again; '' before
	-- any.
	metered          TEXT             NOT NULL DEFAULT ''
);

-- Agents' journals: append-only per (agent, cycle, entry_id).
CREATE TABLE agent_journal (
	agent             TEXT             NOT NULL,
	cycle             TEXT             NOT NULL,
	entry_id          TEXT             NOT NULL,
	title             TEXT             NOT NULL,
	content           TEXT             NOT NULL,
	content_signature TEXT             NOT NULL,
	signal_weight     DOUBLE PRECISION NOT NULL,
	evidence          TEXT             NOT NULL DEFAULT '[]',
	sent_at           BIGINT           NOT NULL,
	received_at       BIGINT           NOT NULL,
	-- The entry's size in bytes (title, content, signature, evidence; at
	-- least 1 KiB), which the journal's limits (fleet.journal) count.
	size              BIGINT           NOT NULL DEFAULT 0,
	PRIMARY KEY (agent, cycle, entry_id)
);
CREATE INDEX agent_journal_recent_idx ON agent_journal (agent, received_at);
CREATE INDEX agent_journal_received_idx ON agent_journal (received_at);
-- What a cycle and an agent hold, and a cycle's pages, without the text.
CREATE INDEX agent_journal_cycle_idx ON agent_journal (agent, cycle, received_at, entry_id, size);

-- Things agents attest to; the window closes five minutes after opening.
-- outcome is what the verdicts add up to (v40), outcome_seq counts its
-- changes (each relayed once), final_at is set when the window closed on it.
CREATE TABLE attestation_subject (
	id          TEXT PRIMARY KEY,
	hash        TEXT   NOT NULL,
	title       TEXT   NOT NULL DEFAULT '',
	opened_at   BIGINT NOT NULL,
	closes_at   BIGINT NOT NULL,
	outcome     TEXT   NOT NULL DEFAULT 'pending',
	outcome_seq BIGINT NOT NULL DEFAULT 0,
	final_at    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX attestation_subject_final_idx ON attestation_subject (final_at);
CREATE INDEX attestation_subject_closes_idx ON attestation_subject (closes_at);

-- The agents whose verdict a subject awaits.
CREATE TABLE attestation_awaited (
	subject_id TEXT NOT NULL REFERENCES attestation_subject (id) ON DELETE CASCADE,
	agent      TEXT NOT NULL,
	PRIMARY KEY (subject_id, agent)
);
CREATE INDEX attestation_awaited_agent_idx ON attestation_awaited (agent);

-- Verdicts: upsert per (subject, agent) while the window is open.
CREATE TABLE attestation (
	subject_id  TEXT   NOT NULL REFERENCES attestation_subject (id) ON DELETE CASCADE,
	agent       TEXT   NOT NULL,
	verdict     TEXT   NOT NULL,
	rationale   TEXT   NOT NULL,
	signature   TEXT   NOT NULL,
	posture     TEXT   NOT NULL DEFAULT '',
	received_at BIGINT NOT NULL,
	PRIMARY KEY (subject_id, agent)
);

-- Workspace lease (v4)
-- Exactly one Jarvis works for a workspace at a time: the one whose epoch
-- is in this row and whose lease has not expired. The row is never
-- deleted, so epochs only ever grow and a stale epoch is never reused.
CREATE TABLE workspace_lease (
	workspace_id TEXT   PRIMARY KEY,
	holder       TEXT   NOT NULL,
	epoch        BIGINT NOT NULL,
	acquired_at  BIGINT NOT NULL,
	expires_at   BIGINT NOT NULL
);

-- Circuit breaker (v5)
-- One row per agent ever halted; an agent without a row is closed. version
-- counts transitions and every write compares it (compare-and-swap).
CREATE TABLE breaker (
	agent    TEXT   PRIMARY KEY,
	state    TEXT   NOT NULL,
	event_id TEXT   NOT NULL,
	since    BIGINT NOT NULL,
	version  BIGINT NOT NULL
);
CREATE INDEX breaker_state_idx ON breaker (state, since);

-- Every halt: why it was opened and how it ended.
CREATE TABLE breaker_event (
	-- seq keeps the order events were opened in, even within a millisecond.
	-- only: sqlite for next line
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id          TEXT   NOT NULL UNIQUE,
	agent       TEXT   NOT NULL,
	opened_at   BIGINT NOT NULL,
	severity    TEXT   NOT NULL,
	reason      TEXT   NOT NULL,
	evidence    TEXT   NOT NULL DEFAULT '[]',
	opened_by   TEXT   NOT NULL,
	previous_id TEXT   NOT NULL DEFAULT '',
	reviewed_by TEXT   NOT NULL DEFAULT '',
	reviewed_at BIGINT NOT NULL DEFAULT 0,
	resolved_at BIGINT NOT NULL DEFAULT 0,
	resolved_by TEXT   NOT NULL DEFAULT '',
	resolution  TEXT   NOT NULL DEFAULT '',
	next_id     TEXT   NOT NULL DEFAULT ''
);
CREATE INDEX breaker_event_agent_idx ON breaker_event (agent, seq);

-- The audit trail: one row per transition, written in the same transaction.
CREATE TABLE breaker_audit (
	-- only: sqlite for next line
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	agent      TEXT    NOT NULL,
	event_id   TEXT    NOT NULL REFERENCES breaker_event (id),
	action     TEXT    NOT NULL,
	from_state TEXT    NOT NULL,
	to_state   TEXT    NOT NULL,
	actor      TEXT    NOT NULL,
	why        TEXT    NOT NULL DEFAULT '',
	at         BIGINT  NOT NULL
);
CREATE INDEX breaker_audit_event_idx ON breaker_audit (event_id, seq);

-- Cards (v6)
-- A card set published under a client's idempotency key. card_count is the
-- number of cards the set holds; the set and its cards are written in one
-- transaction, so a stored set always has exactly that many. publish_room
-- and publish_notice are the message a person published the set with (its
-- room and the outbox key of the notice), so that what becomes of the
-- set's cards is told in that message's thread; a set an agent published
-- over the API has none, and its reports go to the dedicated room.
CREATE TABLE card_set (
	id             TEXT    PRIMARY KEY,
	idem_key       TEXT    NOT NULL UNIQUE,
	fingerprint    TEXT    NOT NULL,
	author         TEXT    NOT NULL,
	ratified_by    TEXT    NOT NULL DEFAULT '',
	card_count     INTEGER NOT NULL,
	published_at   BIGINT  NOT NULL,
	publish_room   TEXT    NOT NULL DEFAULT '',
	publish_notice TEXT    NOT NULL DEFAULT ''
);

-- A backlog card. The spec columns (goal, acceptance, spec_priority,
-- depends_on, budget) are written once and never updated; changes arrive
-- as amendments. priority is the current class. worker is the agent that
-- claimed the card and works it, '' while nobody does: only it may move
-- the card or ask about it. source_trust is where the card's text came
-- from (core.Trust), copied from its drafts and the account that
-- published them.
CREATE TABLE card (
	id                TEXT    PRIMARY KEY,
	-- On PostgreSQL the check that the set exists runs when the
	-- transaction commits: under SERIALIZABLE the read of the set's key
	-- locks the index page every new set is inserted into, and read after
	-- the transaction's last write it makes far fewer concurrent publishes
	-- collide. SQLite runs one writer at a time and checks at once.
	-- only: sqlite for next line
	set_id            TEXT    NOT NULL REFERENCES card_set (id),
	-- only: postgres for next line
	set_id            TEXT    NOT NULL REFERENCES card_set (id) DEFERRABLE INITIALLY DEFERRED,
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
	worker            TEXT    NOT NULL DEFAULT '',
	source_trust      TEXT    NOT NULL DEFAULT 'native',
	UNIQUE (set_id, position)
);
CREATE INDEX card_state_idx ON card (state, priority, created_at);

-- Amendments of a card, one per revision after the first, with where
-- their text came from (core.Trust).
CREATE TABLE card_amendment (
	card_id      TEXT    NOT NULL REFERENCES card (id),
	revision     INTEGER NOT NULL,
	kind         TEXT    NOT NULL,
	text         TEXT    NOT NULL,
	priority     TEXT    NOT NULL DEFAULT '',
	acceptance   TEXT    NOT NULL DEFAULT '[]',
	decision_id  TEXT    NOT NULL DEFAULT '',
	option_no    INTEGER NOT NULL DEFAULT 0,
	elapsed_ms   BIGINT  NOT NULL DEFAULT 0,
	author       TEXT    NOT NULL,
	network      TEXT    NOT NULL DEFAULT '',
	created_at   BIGINT  NOT NULL,
	source_trust TEXT    NOT NULL DEFAULT 'native',
	PRIMARY KEY (card_id, revision)
);

-- Reviewer sign-offs, each pinned to the revision the reviewer signed,
-- with what they found (approved or changes_requested) and maybe a note.
CREATE TABLE card_signoff (
	card_id         TEXT    NOT NULL REFERENCES card (id),
	reviewer        TEXT    NOT NULL,
	signed_revision INTEGER NOT NULL,
	signed_at       BIGINT  NOT NULL,
	verdict         TEXT    NOT NULL DEFAULT 'approved',
	note            TEXT    NOT NULL DEFAULT '',
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

-- Each person's draft cards, published together as one set, with where
-- they came from (core.Trust).
CREATE TABLE card_draft (
	person       TEXT    NOT NULL,
	ref          TEXT    NOT NULL,
	draft_id     TEXT    NOT NULL,
	seq          INTEGER NOT NULL,
	goal         TEXT    NOT NULL,
	acceptance   TEXT    NOT NULL,
	priority     TEXT    NOT NULL,
	depends_on   TEXT    NOT NULL DEFAULT '[]',
	budget       TEXT    NOT NULL DEFAULT '',
	added_at     BIGINT  NOT NULL,
	source_trust TEXT    NOT NULL DEFAULT 'native',
	PRIMARY KEY (person, ref)
);

-- Pending confirmations (v7)
-- Things Jarvis asked a person to confirm in chat (tripwire proposals,
-- !sys restart, card sets to publish), keyed by the notice that asked.
CREATE TABLE pending_action (
	key         TEXT PRIMARY KEY,
	kind        TEXT   NOT NULL,
	room_id     TEXT   NOT NULL,
	requester   TEXT   NOT NULL,
	payload     TEXT   NOT NULL DEFAULT '',
	created_at  BIGINT NOT NULL,
	expires_at  BIGINT NOT NULL,
	resolved_at BIGINT NOT NULL DEFAULT 0,
	resolution  TEXT   NOT NULL DEFAULT ''
);
CREATE INDEX pending_action_room_idx ON pending_action (room_id, resolved_at);
CREATE INDEX pending_action_done_idx ON pending_action (resolved_at, expires_at);

-- Event/wake router (v9)
-- What the router last told people about each condition, so that it wakes
-- on change only and a restart does not notify again.
CREATE TABLE wake_state (
	key         TEXT PRIMARY KEY,
	fingerprint TEXT    NOT NULL,
	notified_at BIGINT  NOT NULL,
	active      BOOLEAN NOT NULL,
	count       INTEGER NOT NULL
);

-- Source events the router acted on, each at most once.
CREATE TABLE consumed_event (
	source      TEXT   NOT NULL,
	event_id    TEXT   NOT NULL,
	consumed_at BIGINT NOT NULL,
	PRIMARY KEY (source, event_id)
);

-- Identity links (v10)
-- A bridged puppet linked to the Matrix account of the person behind it.
CREATE TABLE identity_link (
	puppet    TEXT PRIMARY KEY,
	account   TEXT   NOT NULL,
	network   TEXT   NOT NULL,
	linked_at BIGINT NOT NULL
);

-- One-time codes for linking, asked from one account, confirmed from the
-- other: a code names the one account that may redeem it and counts wrong
-- tries.
CREATE TABLE link_code (
	code       TEXT PRIMARY KEY,
	from_user  TEXT    NOT NULL,
	network    TEXT    NOT NULL,
	expires_at BIGINT  NOT NULL,
	redeemer   TEXT    NOT NULL DEFAULT '',
	tries      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX link_code_expires_idx ON link_code (expires_at);

-- Wrong link codes sent from an account, to lock it after too many.
CREATE TABLE link_failure (
	account TEXT   NOT NULL,
	at      BIGINT NOT NULL
);
CREATE INDEX link_failure_account ON link_failure (account, at);

-- Conversation excerpts (v11)
-- Recent messages people wrote to Jarvis, tagged with their trust, for the
-- rationale of proposals; external instruction-shaped text is held.
CREATE TABLE excerpt (
	-- only: sqlite for next line
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	room_id     TEXT    NOT NULL,
	sender      TEXT    NOT NULL,
	event_id    TEXT    NOT NULL,
	body        TEXT    NOT NULL,
	trust       TEXT    NOT NULL,
	held        BOOLEAN NOT NULL,
	ratified_by TEXT    NOT NULL DEFAULT '',
	at          BIGINT  NOT NULL
);
CREATE INDEX excerpt_room_sender_idx ON excerpt (room_id, sender, id);

-- API credentials (v12)
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

-- Source history (v16)
-- What the tripwire evaluator read from each source, for charts and
-- backtests. Each source gets a small id so that a reading row carries no
-- kind or param text.
CREATE TABLE history_source (
	-- only: sqlite for next line
	id    INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id    BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	kind  TEXT NOT NULL,
	param TEXT NOT NULL,
	UNIQUE (kind, param)
);

-- A reading (bucket false): num holds a number, val the JSON of a string or
-- boolean. Older than two days, the readings of each 5 minutes become one
-- bucket row (bucket true) at the bucket's start: num or val its last
-- value, min and max its extremes when its values are numbers (NULL where
-- an extreme is the last value).
CREATE TABLE source_reading (
	source_id BIGINT  NOT NULL REFERENCES history_source (id),
	at        BIGINT  NOT NULL,
	num       DOUBLE PRECISION,
	val       TEXT,
	bucket    BOOLEAN NOT NULL DEFAULT false,
	min       DOUBLE PRECISION,
	max       DOUBLE PRECISION,
	PRIMARY KEY (source_id, at)
-- only: sqlite for next line
) WITHOUT ROWID;
-- only: postgres for next line
);

-- Console: the operator's terminal (v18)
-- What people type in `jarvis console`, kept until the Jarvis holding the
-- workspace lease has acted on it (handled_at, with how: outcome). answers
-- is the key of the notice the line answers, when it is an answer.
CREATE TABLE console_input (
	-- only: sqlite for next line
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	user_name  TEXT    NOT NULL,
	body       TEXT    NOT NULL,
	answers    TEXT    NOT NULL DEFAULT '',
	created_at BIGINT  NOT NULL,
	handled_at BIGINT  NOT NULL DEFAULT 0,
	outcome    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX console_input_waiting_idx ON console_input (handled_at, seq);

-- How far each console user has read the outbox: a console shows what
-- arrived after its cursor, once, and when reopened what arrived while it
-- was closed. seq is an outbox seq on SQLite, and on PostgreSQL the oldest
-- transaction still running when the console last read (outbox.txn).
CREATE TABLE console_cursor (
	user_name TEXT   PRIMARY KEY,
	seq       BIGINT NOT NULL,
	read_at   BIGINT NOT NULL
);

-- Approval requests (v19)
-- An agent's request for permission before a risky action, relayed to the
-- room and decided once (core/approval). The status changes from pending
-- to approved, denied or expired, and never again.
CREATE TABLE approval (
	id           TEXT    PRIMARY KEY,
	agent        TEXT    NOT NULL,
	idem_key     TEXT    NOT NULL,
	fingerprint  TEXT    NOT NULL,
	action       TEXT    NOT NULL,
	reason       TEXT    NOT NULL,
	options      TEXT    NOT NULL DEFAULT '[]',
	approver     TEXT    NOT NULL DEFAULT '',
	asked        TEXT    NOT NULL DEFAULT '[]',
	deadline     BIGINT  NOT NULL DEFAULT 0,
	default_to   TEXT    NOT NULL DEFAULT '',
	status       TEXT    NOT NULL,
	option_no    INTEGER NOT NULL DEFAULT 0,
	defaulted    BOOLEAN NOT NULL DEFAULT false,
	decided_by   TEXT    NOT NULL DEFAULT '',
	network      TEXT    NOT NULL DEFAULT '',
	requested_at BIGINT  NOT NULL,
	decided_at   BIGINT  NOT NULL DEFAULT 0
);
-- An idempotency key names one request of its agent.
CREATE UNIQUE INDEX approval_key_idx ON approval (agent, idem_key);
CREATE INDEX approval_pending_idx ON approval (status, deadline);

-- Spend and boots from heartbeats (v21)
-- What each agent spent per UTC day, metered against its daily budget, with whether the day's
-- budget warning and alert were posted; and each process an agent ran, by
-- the boot id its heartbeats carry, to tell a crash loop.
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

-- Reminders and people's time zones (v22)
-- A person's reminders (core/reminder): due_at is the next delivery, at_time
-- the time first set, whose wall-clock time in zone repeats every day or
-- week (every_unit); deliveries numbers the notices sent for it.
CREATE TABLE reminder (
	-- only: sqlite for next line
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id         BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	owner      TEXT    NOT NULL,
	body       TEXT    NOT NULL,
	due_at     BIGINT  NOT NULL,
	at_time    BIGINT  NOT NULL,
	every_unit TEXT    NOT NULL DEFAULT '',
	zone       TEXT    NOT NULL DEFAULT '',
	status     TEXT    NOT NULL DEFAULT 'waiting',
	deliveries INTEGER NOT NULL DEFAULT 0,
	created_at BIGINT  NOT NULL
);
CREATE INDEX reminder_due_idx ON reminder (status, due_at);
CREATE INDEX reminder_owner_idx ON reminder (owner, status);

-- What a person set about themselves: their time zone (IANA name; empty
-- is the configured default), and their quiet hours and the time of their
-- daily digest, in minutes after midnight in their time zone (core/quiet);
-- -1 when they set none.
CREATE TABLE person (
	user_id    TEXT    PRIMARY KEY,
	time_zone  TEXT    NOT NULL DEFAULT '',
	quiet_from INTEGER NOT NULL DEFAULT -1,
	quiet_to   INTEGER NOT NULL DEFAULT -1,
	digest_at  INTEGER NOT NULL DEFAULT -1
);

-- Tasks, notes and ideas (v23)
-- A person's notebook (core/notebook): tasks (due_at, done_at 0 when not
-- set), notes and ideas. Notes are searched in full text: on SQLite an FTS4
-- table whose docid is the entry's id (FTS4 is in go-sqlite3's default
-- build; FTS5 needs the sqlite_fts5 build tag), written by the store with
-- the entry; on PostgreSQL a GIN index over to_tsvector('simple', body).
CREATE TABLE notebook (
	-- only: sqlite for next line
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id         BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	owner      TEXT    NOT NULL,
	kind       TEXT    NOT NULL,
	body       TEXT    NOT NULL,
	due_at     BIGINT  NOT NULL DEFAULT 0,
	done_at    BIGINT  NOT NULL DEFAULT 0,
	created_at BIGINT  NOT NULL
);
CREATE INDEX notebook_owner_idx ON notebook (owner, kind, created_at);
-- only: sqlite for next line
CREATE VIRTUAL TABLE notebook_fts USING fts4(body, tokenize=unicode61);
-- only: postgres for next line
CREATE INDEX notebook_fts_idx ON notebook USING GIN (to_tsvector('simple', body));

-- On-call incidents (v24)
-- An alert Jarvis raised in its room (core/oncall), from the moment it is
-- posted until what it reported resolves: notice_key is the alert notice
-- that stands for it now, body that notice's text; owner is who claimed it
-- (👀 or `mine`), '' until someone does. Times are Unix milliseconds, 0
-- when not yet.
CREATE TABLE incident (
	id            TEXT   PRIMARY KEY,
	notice_key    TEXT   NOT NULL,
	room_id       TEXT   NOT NULL,
	body          TEXT   NOT NULL,
	kind          TEXT   NOT NULL,
	subject       TEXT   NOT NULL,
	opened_at     BIGINT NOT NULL,
	owner         TEXT   NOT NULL DEFAULT '',
	claimed_at    BIGINT NOT NULL DEFAULT 0,
	resolved_at   BIGINT NOT NULL DEFAULT 0,
	escalated_at  BIGINT NOT NULL DEFAULT 0,
	-- Snoozed with 💤 (or a reply `snooze 4h`) by snoozed_by at snoozed_at:
	-- nobody is called to it until snoozed_until, when one reply in its
	-- thread says it is back and snoozed_until goes back to 0.
	snoozed_by    TEXT   NOT NULL DEFAULT '',
	snoozed_at    BIGINT NOT NULL DEFAULT 0,
	snoozed_until BIGINT NOT NULL DEFAULT 0,
	-- tier is how many escalation tiers an unclaimed incident called (the
	-- admins, then oncall.escalation in order), escalated_at when it called
	-- the last; reminded_at is when the owner of a claimed one was last
	-- reminded that it is still open.
	tier          INTEGER NOT NULL DEFAULT 0,
	reminded_at   BIGINT NOT NULL DEFAULT 0,
	-- An incident folded into another (an agent silent while one it depends
	-- on is down) or grouped with others of its kind (several agents late
	-- within fleet.group_window) names the incident whose alert stands for
	-- it; it has no alert of its own. '' for an incident with its own alert.
	parent        TEXT   NOT NULL DEFAULT '',
	-- The alert a silence holds from the room: its outbox key and mentions
	-- (a JSON array; body holds its text), for posting it when the silence
	-- ends with the incident still open. '' when none is held.
	held_key      TEXT   NOT NULL DEFAULT '',
	held_mentions TEXT   NOT NULL DEFAULT '[]'
);
-- The escalation sweep reads the open, unclaimed ones; the reminder sweep
-- the open, claimed ones.
CREATE INDEX incident_open_idx ON incident (opened_at) WHERE owner = '' AND resolved_at = 0;
CREATE INDEX incident_snoozed_idx ON incident (snoozed_until) WHERE snoozed_until > 0 AND resolved_at = 0;
CREATE INDEX incident_claimed_idx ON incident (claimed_at) WHERE owner <> '' AND resolved_at = 0;
CREATE INDEX incident_parent_idx ON incident (parent) WHERE parent <> '';
-- The wake router finds the open incident of a condition (kind, subject)
-- at every alert and every all-clear; the fleet watcher finds the alerts
-- of a kind opened within fleet.group_window that a new silence may be
-- grouped with, and a kind's open incidents at every sweep.
CREATE INDEX incident_subject_open_idx ON incident (kind, subject, opened_at) WHERE resolved_at = 0;
CREATE INDEX incident_recent_open_idx ON incident (kind, opened_at) WHERE resolved_at = 0 AND parent = '';

-- Quiet hours and daily digests (v25)
-- Trips held for a digest: kind 'quiet' is a push held during its owner's
-- quiet hours, delivered when they end; 'daily' a journal-only trip,
-- delivered in the next daily digest. Deleted when delivered. label and
-- summary are the tripwire's, as written: untrusted.
CREATE TABLE held_push (
	-- only: sqlite for next line
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	owner       TEXT    NOT NULL,
	kind        TEXT    NOT NULL,
	tripwire_id TEXT    NOT NULL,
	trip        BIGINT  NOT NULL,
	label       TEXT    NOT NULL,
	summary     TEXT    NOT NULL,
	at          BIGINT  NOT NULL
);
CREATE INDEX held_push_owner_idx ON held_push (owner, kind, at);

-- Silences (v26)
-- Silences (`!silence`): a maintenance window that holds the alerts about
-- target (an agent, a source, or "fleet" for every fleet alert) and the
-- trips of tripwires reading it from the room and pushes; they are
-- journaled instead. scope is '' for an admin's, which holds alerts and
-- everyone's trips, or the person whose own trips it holds. It ends at
-- ends_at, or when what it silences resolves (until_resolved, ends_at then
-- the upper bound), and its end is told in room_id with what it held: the
-- counts, and held, the first lines, as written (untrusted). reason is as
-- written too. ended_at is 0 while it holds.
CREATE TABLE silence (
	-- only: sqlite for next line
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	id             BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	scope          TEXT    NOT NULL,
	target         TEXT    NOT NULL,
	reason         TEXT    NOT NULL,
	set_by         TEXT    NOT NULL,
	room_id        TEXT    NOT NULL,
	started_at     BIGINT  NOT NULL,
	ends_at        BIGINT  NOT NULL,
	until_resolved BOOLEAN NOT NULL DEFAULT false,
	ended_at       BIGINT  NOT NULL DEFAULT 0,
	held_alerts    INTEGER NOT NULL DEFAULT 0,
	held_trips     INTEGER NOT NULL DEFAULT 0,
	held           TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX silence_active_idx ON silence (ends_at) WHERE ended_at = 0;

-- Agents added over the API or the CLI (v36)
-- The agents a supervisor added with PUT /api/agents/{name} or an operator
-- with `jarvis agent add`, watched beside the configuration file's (which
-- win a name both give). name is as given, unique in any case; cadence
-- and grace are milliseconds (cadence 0: the default, or the schedule's);
-- schedule is a cron schedule in time_zone, '' for none; depends_on the
-- names it needs, comma-separated. added_by is the credential or "cli"
-- that added or last changed it, at added_at (Unix milliseconds).
CREATE TABLE added_agent (
	name       TEXT   PRIMARY KEY,
	name_key   TEXT   NOT NULL UNIQUE,
	cadence    BIGINT NOT NULL,
	grace      BIGINT NOT NULL,
	schedule   TEXT   NOT NULL,
	time_zone  TEXT   NOT NULL,
	depends_on TEXT   NOT NULL,
	added_by   TEXT   NOT NULL,
	added_at   BIGINT NOT NULL
);

-- Jarvis's own boots (v37): each start with its boot id; stopped_at is 0
-- until a clean stop, so a boot that never stopped cleanly crashed.
CREATE TABLE jarvis_boot (
	id         TEXT   PRIMARY KEY,
	host       TEXT   NOT NULL,
	version    TEXT   NOT NULL,
	started_at BIGINT NOT NULL,
	stopped_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX jarvis_boot_started_idx ON jarvis_boot (started_at);

-- The cards an agent works, read for each batch of its heartbeats' answers
-- (v37).
CREATE INDEX card_worker_idx ON card (worker, updated_at);

-- Notices an agent's report caused on a Jarvis that did not hold the lease
-- (v38), kept until the holder moves them into the outbox.
CREATE TABLE staged_notice (
	-- only: sqlite for next line
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	key        TEXT    NOT NULL UNIQUE,
	notice     TEXT    NOT NULL,
	created_at BIGINT  NOT NULL
);

-- The evaluator's skip log (v39): each skipped evaluation, its observation
-- null; each tripwire keeps its newest tripwires.skip_log.per_tripwire.
CREATE TABLE tripwire_skip (
	-- only: sqlite for next line
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	-- only: postgres for next line
	seq         BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	tripwire_id TEXT    NOT NULL,
	at          BIGINT  NOT NULL,
	reason      TEXT    NOT NULL,
	detail      TEXT    NOT NULL
);
CREATE INDEX tripwire_skip_idx ON tripwire_skip (tripwire_id, seq);

-- The model turns not yet answered (v41): recorded when the message is
-- marked handled, deleted when its answer is queued.
CREATE TABLE model_turn (
	event_id   TEXT   PRIMARY KEY,
	room_id    TEXT   NOT NULL,
	sender     TEXT   NOT NULL,
	message    TEXT   NOT NULL,
	started_at BIGINT NOT NULL
);
