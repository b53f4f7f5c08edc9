-- v10: Identity links
-- A bridged puppet linked to the Matrix account of the person behind it.
CREATE TABLE identity_link (
	puppet    TEXT PRIMARY KEY,
	account   TEXT   NOT NULL,
	network   TEXT   NOT NULL,
	linked_at BIGINT NOT NULL
);

-- One-time codes for linking, asked from one account, confirmed from the other.
CREATE TABLE link_code (
	code       TEXT PRIMARY KEY,
	from_user  TEXT   NOT NULL,
	network    TEXT   NOT NULL,
	expires_at BIGINT NOT NULL
);
