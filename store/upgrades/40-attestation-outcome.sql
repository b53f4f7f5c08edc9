-- v40: Each attestation subject keeps the outcome of its verdicts
-- The verdicts on a subject combine as the reporting contract says
-- (fleet.attestations: a quorum of the agents it awaits, a veto by the
-- designated agent) into its outcome: pending, passed, flagged, rejected,
-- vetoed or no-quorum. outcome_seq counts its changes, each relayed to the
-- room once (its notice is keyed by it); final_at is when the window
-- closed on it, 0 while it may still change. Subjects opened before this
-- upgrade count as decided, so that none is relayed late.
ALTER TABLE attestation_subject ADD COLUMN outcome TEXT NOT NULL DEFAULT 'pending';
ALTER TABLE attestation_subject ADD COLUMN outcome_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE attestation_subject ADD COLUMN final_at BIGINT NOT NULL DEFAULT 0;
UPDATE attestation_subject SET final_at = closes_at;
CREATE INDEX attestation_subject_final_idx ON attestation_subject (final_at);
-- Every heartbeat's answer reads the open subjects awaiting its agent:
-- from the open ones, however many have closed.
CREATE INDEX attestation_subject_closes_idx ON attestation_subject (closes_at);
