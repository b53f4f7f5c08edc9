-- v3: Fleet
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
	incident         INTEGER          NOT NULL DEFAULT 0
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
	PRIMARY KEY (agent, cycle, entry_id)
);
CREATE INDEX agent_journal_recent_idx ON agent_journal (agent, received_at);

-- Things agents attest to; the window closes five minutes after opening.
CREATE TABLE attestation_subject (
	id        TEXT PRIMARY KEY,
	hash      TEXT   NOT NULL,
	title     TEXT   NOT NULL DEFAULT '',
	opened_at BIGINT NOT NULL,
	closes_at BIGINT NOT NULL
);

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
