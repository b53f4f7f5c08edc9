package store

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
)

const (
	insertCardSetQuery = `
		INSERT INTO card_set (id, idem_key, fingerprint, author, ratified_by, card_count, published_at, publish_room,
		                      publish_notice)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (idem_key) DO NOTHING`
	insertCardQuery = `
		INSERT INTO card (set_id, id, position, ref, goal, acceptance, spec_priority, depends_on, budget, author,
		                  ratified_by, ratified_revision, priority, state, state_note, revision, created_at, updated_at, source_trust)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`
	cardSetColumns       = `id, idem_key, fingerprint, author, ratified_by, card_count, published_at, publish_room, publish_notice`
	cardSetByKeyQuery    = `SELECT ` + cardSetColumns + ` FROM card_set WHERE idem_key = $1`
	cardSetQuery         = `SELECT ` + cardSetColumns + ` FROM card_set WHERE id = $1`
	cardSetByNoticeQuery = `SELECT ` + cardSetColumns + ` FROM card_set WHERE publish_notice = $1 AND publish_notice <> ''`
	cardsOfSetQuery      = `SELECT ` + cardColumns + ` FROM card WHERE set_id = $1 ORDER BY position`
)

// massInsertCards writes all the cards of a set in one statement; the set
// id is the static parameter.
var massInsertCards = dbutil.NewMassInsertBuilder[cardRow, [1]any](insertCardQuery,
	"($1, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d)")

// cardRow is a card with its position in its set, as inserted.
type cardRow struct {
	card.Card
	position int
}

// GetMassInsertValues returns the row's values after the set id.
func (r cardRow) GetMassInsertValues() [18]any {
	c := r.Card
	return [18]any{c.ID, r.position, c.Ref, c.Spec.Goal, jsonStrings(c.Spec.Acceptance), string(c.Spec.Priority),
		jsonStrings(c.Spec.DependsOn), c.Spec.Budget, c.Author, c.RatifiedBy, c.RatifiedRevision, string(c.Priority),
		string(c.State), c.StateNote, c.Revision, c.CreatedAt.UnixMilli(), c.UpdatedAt.UnixMilli(), string(c.SourceTrust)}
}

// CardSetQuery writes card sets and reads them back by idempotency key.
type CardSetQuery struct {
	db *dbutil.Database
}

var _ card.SetStore = (*CardSetQuery)(nil)

// InsertCardSet writes a set; a key already used is ErrDuplicate. Call it
// and InsertCards inside one transaction, so that the set and its cards are
// written together or not at all.
func (q *CardSetQuery) InsertCardSet(ctx context.Context, s card.Set) error {
	res, err := q.db.Exec(ctx, insertCardSetQuery, s.ID, s.Key, s.Fingerprint, s.Author, s.RatifiedBy, s.Size,
		s.PublishedAt.UnixMilli(), s.PublishedIn.Room, s.PublishedIn.Notice)
	if err != nil {
		return fmt.Errorf("insert card set %q: %w", s.Key, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("insert card set %q: %w", s.Key, core.ErrDuplicate)
	}
	return nil
}

// InsertCards writes the cards of a set in one statement.
func (q *CardSetQuery) InsertCards(ctx context.Context, setID string, cards []card.Card) error {
	if len(cards) == 0 {
		return nil
	}
	rows := make([]cardRow, len(cards))
	for i, c := range cards {
		rows[i] = cardRow{Card: c, position: i}
	}
	query, params := massInsertCards.Build([1]any{setID}, rows)
	if _, err := q.db.Exec(ctx, query, params...); err != nil {
		return fmt.Errorf("insert the cards of set %s: %w", setID, err)
	}
	return nil
}

// CardSetByKey returns the set published under an idempotency key.
func (q *CardSetQuery) CardSetByKey(ctx context.Context, key string) (card.Set, error) {
	s, err := scanCardSet(q.db.QueryRow(ctx, cardSetByKeyQuery, key))
	return s, notFound(err, "card set "+key)
}

// CardSet returns a set by id.
func (q *CardSetQuery) CardSet(ctx context.Context, id string) (card.Set, error) {
	s, err := scanCardSet(q.db.QueryRow(ctx, cardSetQuery, id))
	return s, notFound(err, "card set "+id)
}

// CardSetByNotice returns the set published by answering the notice.
func (q *CardSetQuery) CardSetByNotice(ctx context.Context, notice string) (card.Set, error) {
	s, err := scanCardSet(q.db.QueryRow(ctx, cardSetByNoticeQuery, notice))
	return s, notFound(err, "card set published by "+notice)
}

func scanCardSet(row dbutil.Scannable) (card.Set, error) {
	var s card.Set
	var publishedAt int64
	err := row.Scan(&s.ID, &s.Key, &s.Fingerprint, &s.Author, &s.RatifiedBy, &s.Size, &publishedAt, &s.PublishedIn.Room,
		&s.PublishedIn.Notice)
	s.PublishedAt = time.UnixMilli(publishedAt)
	return s, err
}

// CardsOfSet returns a set's cards in the order they were given.
func (q *CardSetQuery) CardsOfSet(ctx context.Context, setID string) ([]card.Card, error) {
	rows, err := q.db.Query(ctx, cardsOfSetQuery, setID)
	return dbutil.NewRowIterWithError(rows, scanCard, err).AsList()
}
