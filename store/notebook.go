package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/notebook"
)

const (
	notebookColumns     = `id, owner, kind, body, due_at, done_at, created_at`
	insertEntryQuery    = `INSERT INTO notebook (owner, kind, body, due_at, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id`
	insertEntryFTSQuery = `INSERT INTO notebook_fts (docid, body) VALUES ($1, $2)`
	listTasksQuery      = `SELECT ` + notebookColumns + ` FROM notebook WHERE owner = $1 AND kind = 'task' AND done_at = 0
		ORDER BY CASE WHEN due_at = 0 THEN 1 ELSE 0 END, due_at, id LIMIT $2`
	listEntriesQuery  = `SELECT ` + notebookColumns + ` FROM notebook WHERE owner = $1 AND kind = $2 ORDER BY created_at DESC, id DESC LIMIT $3`
	countEntriesQuery = `SELECT COUNT(*) FROM notebook WHERE owner = $1 AND kind = $2 AND done_at = 0`
	finishTaskQuery   = `UPDATE notebook SET done_at = $3 WHERE owner = $1 AND id = $2 AND kind = 'task' AND done_at = 0
		RETURNING ` + notebookColumns
	// The words come as one string: quoted terms for FTS4's MATCH (every one
	// must occur), words for PostgreSQL's plainto_tsquery (likewise).
	searchNotesSQLiteQuery = `SELECT n.id, n.owner, n.kind, n.body, n.due_at, n.done_at, n.created_at
		FROM notebook_fts f JOIN notebook n ON n.id = f.docid
		WHERE notebook_fts MATCH $2 AND n.owner = $1 AND n.kind = 'note' ORDER BY n.created_at DESC, n.id DESC LIMIT $3`
	searchNotesPostgresQuery = `SELECT ` + notebookColumns + ` FROM notebook
		WHERE owner = $1 AND kind = 'note' AND to_tsvector('simple', body) @@ plainto_tsquery('simple', $2)
		ORDER BY created_at DESC, id DESC LIMIT $3`
	moveEntriesQuery = `UPDATE notebook SET owner = $2 WHERE owner = $1`
)

// NotebookQuery keeps people's tasks, notes and ideas.
type NotebookQuery struct {
	db *dbutil.Database
}

var _ notebook.Store = (*NotebookQuery)(nil)

// Notebook returns the notebook queries.
func (s *Store) Notebook() *NotebookQuery { return &NotebookQuery{db: s.DB} }

// InsertEntry writes a new entry, and a note into the SQLite full-text
// index too, and returns its ID.
func (q *NotebookQuery) InsertEntry(ctx context.Context, e notebook.Entry) (int64, error) {
	var id int64
	if err := q.db.QueryRow(ctx, insertEntryQuery, e.Owner, string(e.Kind), e.Text, millis(e.Due), e.CreatedAt.UnixMilli()).Scan(&id); err != nil {
		return 0, err
	}
	if e.Kind == notebook.Note && q.db.Dialect == dbutil.SQLite {
		if _, err := q.db.Exec(ctx, insertEntryFTSQuery, id, e.Text); err != nil {
			return 0, fmt.Errorf("index the note: %w", err)
		}
	}
	return id, nil
}

// Entries returns the owner's open tasks, soonest due first, or their
// newest notes or ideas.
func (q *NotebookQuery) Entries(ctx context.Context, owner string, kind notebook.Kind, limit int) ([]notebook.Entry, error) {
	if kind == notebook.Task {
		return q.list(ctx, listTasksQuery, owner, limit)
	}
	return q.list(ctx, listEntriesQuery, owner, string(kind), limit)
}

// CountEntries counts the owner's entries of a kind, open tasks only for
// tasks.
func (q *NotebookQuery) CountEntries(ctx context.Context, owner string, kind notebook.Kind) (int, error) {
	var n int
	err := q.db.QueryRow(ctx, countEntriesQuery, owner, string(kind)).Scan(&n)
	return n, err
}

// FinishTask marks one of the owner's open tasks done.
func (q *NotebookQuery) FinishTask(ctx context.Context, owner string, id int64, at time.Time) (notebook.Entry, error) {
	e, err := scanEntry(q.db.QueryRow(ctx, finishTaskQuery, owner, id, at.UnixMilli()))
	return e, notFound(err, fmt.Sprintf("open task %d", id))
}

// SearchNotes returns the owner's notes holding every word, newest first.
func (q *NotebookQuery) SearchNotes(ctx context.Context, owner string, words []string, limit int) ([]notebook.Entry, error) {
	if len(words) == 0 {
		return nil, nil
	}
	if q.db.Dialect == dbutil.SQLite {
		terms := make([]string, len(words))
		for i, w := range words {
			terms[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
		}
		return q.list(ctx, searchNotesSQLiteQuery, owner, strings.Join(terms, " "), limit)
	}
	return q.list(ctx, searchNotesPostgresQuery, owner, strings.Join(words, " "), limit)
}

// MoveEntries gives every entry of from to to.
func (q *NotebookQuery) MoveEntries(ctx context.Context, from, to string) (int, error) {
	res, err := q.db.Exec(ctx, moveEntriesQuery, from, to)
	if err != nil {
		return 0, fmt.Errorf("move the notebook of %s: %w", from, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (q *NotebookQuery) list(ctx context.Context, query string, args ...any) ([]notebook.Entry, error) {
	rows, err := q.db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []notebook.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func scanEntry(row interface{ Scan(...any) error }) (notebook.Entry, error) {
	var e notebook.Entry
	var kind string
	var due, done, created int64
	err := row.Scan(&e.ID, &e.Owner, &kind, &e.Text, &due, &done, &created)
	e.Kind, e.CreatedAt = notebook.Kind(kind), time.UnixMilli(created)
	if due != 0 {
		e.Due = time.UnixMilli(due)
	}
	if done != 0 {
		e.Done = time.UnixMilli(done)
	}
	return e, err
}
