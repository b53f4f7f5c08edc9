-- v19: Approval requests
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
