-- v14: Link codes bound to one account
-- A link code names the one account that may redeem it and counts wrong
-- tries; codes from before this version named nobody and are dropped.
DELETE FROM link_code;
ALTER TABLE link_code ADD COLUMN redeemer TEXT NOT NULL DEFAULT '';
ALTER TABLE link_code ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;

-- Wrong link codes sent from an account, to lock it after too many.
CREATE TABLE link_failure (
	account TEXT   NOT NULL,
	at      BIGINT NOT NULL
);
CREATE INDEX link_failure_account ON link_failure (account, at);
