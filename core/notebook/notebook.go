// Package notebook keeps what a person asks Jarvis to keep for them,
// personal-assistant work that Jarvis does itself rather than delegate:
// tasks, with an optional due date that reminds them, notes they can search
// in full text, and ideas. Everything is its owner's alone.
package notebook

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/jarvis-hmi/jarvis/core"
)

// Kind is what an entry is.
type Kind string

// The kinds of entries.
const (
	Task Kind = "task"
	Note Kind = "note"
	Idea Kind = "idea"
)

// Limits.
const (
	// MaxText is how long an entry may be, in bytes.
	MaxText = 2000
	// MaxPerOwner is how many entries of one kind (open tasks, notes,
	// ideas) a person may keep.
	MaxPerOwner = 1000
	// MaxResults is how many entries a list or a search returns at most.
	MaxResults = 50
)

// Entry is one task, note or idea.
type Entry struct {
	ID    int64
	Owner string
	Kind  Kind
	Text  string
	// Due is when a task is due (zero: no date).
	Due time.Time
	// Done is when a task was done (zero: open).
	Done      time.Time
	CreatedAt time.Time
}

// Store keeps entries.
type Store interface {
	// InsertEntry writes a new entry and returns its ID.
	InsertEntry(ctx context.Context, e Entry) (int64, error)
	// Entries returns up to limit of the owner's entries of a kind, open
	// tasks only for tasks, newest first (tasks: soonest due first).
	Entries(ctx context.Context, owner string, kind Kind, limit int) ([]Entry, error)
	// CountEntries counts the owner's entries of a kind, open tasks only
	// for tasks.
	CountEntries(ctx context.Context, owner string, kind Kind) (int, error)
	// FinishTask marks one of the owner's open tasks done.
	FinishTask(ctx context.Context, owner string, id int64, at time.Time) (Entry, error)
	// SearchNotes returns up to limit of the owner's notes holding every
	// word, newest first.
	SearchNotes(ctx context.Context, owner string, words []string, limit int) ([]Entry, error)
	// MoveEntries gives every entry of from to to.
	MoveEntries(ctx context.Context, from, to string) (int, error)
}

// Service keeps people's notebooks.
type Service struct {
	store Store
	clock core.Clock
}

// NewService returns a notebook service.
func NewService(store Store, clock core.Clock) *Service { return &Service{store: store, clock: clock} }

// Add keeps a new entry.
func (s *Service) Add(ctx context.Context, owner string, kind Kind, text string, due time.Time) (Entry, error) {
	text = strings.TrimSpace(text)
	if err := s.CheckAdd(ctx, owner, kind, text); err != nil {
		return Entry{}, err
	}
	e := Entry{Owner: owner, Kind: kind, Text: text, Due: due, CreatedAt: s.clock.Now()}
	var err error
	e.ID, err = s.store.InsertEntry(ctx, e)
	return e, err
}

// CheckAdd checks an entry as Add does, adding nothing: its text, and
// that the owner keeps fewer of its kind than MaxPerOwner.
func (s *Service) CheckAdd(ctx context.Context, owner string, kind Kind, text string) error {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return core.Invalid("text", "say what to keep")
	case len(text) > MaxText:
		return core.Invalid("text", "is longer than %d bytes", MaxText)
	}
	n, err := s.store.CountEntries(ctx, owner, kind)
	if err != nil {
		return err
	}
	if n >= MaxPerOwner {
		return core.Invalid(string(kind), "you keep %d already, the most there may be", n)
	}
	return nil
}

// List returns the owner's entries of a kind: open tasks, or the newest
// notes and ideas.
func (s *Service) List(ctx context.Context, owner string, kind Kind) ([]Entry, error) {
	return s.store.Entries(ctx, owner, kind, MaxResults)
}

// Finish marks one of the owner's tasks done.
func (s *Service) Finish(ctx context.Context, owner string, id int64) (Entry, error) {
	return s.store.FinishTask(ctx, owner, id, s.clock.Now())
}

// Find searches the owner's notes for every word of query.
func (s *Service) Find(ctx context.Context, owner, query string) ([]Entry, error) {
	words := Words(query)
	if len(words) == 0 {
		return nil, core.Invalid("query", "give a word to look for")
	}
	return s.store.SearchNotes(ctx, owner, words, MaxResults)
}

// Adopt gives a linked puppet's entries to its account.
func (s *Service) Adopt(ctx context.Context, from, to string) (int, error) {
	return s.store.MoveEntries(ctx, from, to)
}

// Words splits a search into the words a full-text index holds: runs of
// letters and digits, lower-cased, at most eight of them.
func Words(query string) []string {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) > 8 {
		words = words[:8]
	}
	return words
}
