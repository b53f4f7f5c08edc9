-- v23: Tasks, notes and ideas
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
