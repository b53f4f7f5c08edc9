package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
)

const (
	cardColumns = `id, set_id, ref, goal, acceptance, spec_priority, depends_on, budget, author, ratified_by,
		ratified_revision, priority, state, state_note, revision, created_at, updated_at, worker, source_trust`
	getCardQuery = `SELECT ` + cardColumns + ` FROM card WHERE id = $1`
	// cardsByIDQuery takes the ids in place of %s.
	cardsByIDQuery = `SELECT ` + cardColumns + ` FROM card WHERE id IN (%s)`
	// cardsOfWorkersQuery takes the workers in place of %s, from $2.
	cardsOfWorkersQuery = `SELECT worker, id, state, revision FROM card WHERE worker IN (%s)
		AND (state NOT IN ('done', 'cancelled') OR updated_at >= $1) ORDER BY updated_at DESC, id`
	listCardsQuery        = `SELECT ` + cardColumns + ` FROM card ORDER BY priority, created_at, id LIMIT $1`
	listCardsByStateQuery = `SELECT ` + cardColumns + ` FROM card WHERE state = $1 ORDER BY priority, created_at, id LIMIT $2`
	cardStateQuery        = `SELECT state FROM card WHERE id = $1`
	countCardsQuery       = `SELECT COUNT(*) FROM card WHERE state = $1`
	updateCardQuery       = `
		UPDATE card SET priority = $2, ratified_by = $3, ratified_revision = $4, state = $5, state_note = $6,
		                revision = $7, updated_at = $8, worker = $11
		WHERE id = $1 AND state = $9 AND revision = $10`
)

// CardQuery reads and moves cards.
type CardQuery struct {
	db *dbutil.Database
}

var _ card.CardStore = (*CardQuery)(nil)

// CardsStore is every query the card service makes.
type CardsStore struct {
	*CardQuery
	*CardSetQuery
	*CardDraftQuery
	*AmendmentQuery
	*DecisionQuery
	*CardBudgetQuery
}

var _ card.Store = CardsStore{}

// Cards returns the queries the card service needs.
func (s *Store) Cards() CardsStore {
	return CardsStore{
		CardQuery:       &CardQuery{db: s.DB},
		CardSetQuery:    &CardSetQuery{db: s.DB},
		CardDraftQuery:  &CardDraftQuery{db: s.DB},
		AmendmentQuery:  &AmendmentQuery{db: s.DB},
		DecisionQuery:   &DecisionQuery{db: s.DB},
		CardBudgetQuery: &CardBudgetQuery{db: s.DB},
	}
}

// Card returns the card with the given id.
func (q *CardQuery) Card(ctx context.Context, id string) (card.Card, error) {
	c, err := scanCard(q.db.QueryRow(ctx, getCardQuery, id))
	return c, notFound(err, "card "+id)
}

// CardsByID returns each of the given cards that exists, by id, in one
// statement per few thousand cards.
func (q *CardQuery) CardsByID(ctx context.Context, ids []string) (map[string]card.Card, error) {
	out := make(map[string]card.Card, len(ids))
	err := bulkChunks(ids, 1, func(chunk []string) error {
		rows, err := q.db.Query(ctx, fmt.Sprintf(cardsByIDQuery, bulkIn(1, len(chunk))), bulkArgs(chunk)...)
		cards, err := dbutil.NewRowIterWithError(rows, scanCard, err).AsList()
		for _, c := range cards {
			out[c.ID] = c
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %d cards: %w", len(ids), err)
	}
	return out, nil
}

// CardsOfWorkers returns the cards the named agents work: the open ones,
// and those done or cancelled since since, most recently changed first.
func (q *CardQuery) CardsOfWorkers(ctx context.Context, workers []string, since time.Time) ([]card.Work, error) {
	var out []card.Work
	err := bulkChunks(workers, 1, func(chunk []string) error {
		args := append([]any{since.UnixMilli()}, bulkArgs(chunk)...)
		rows, err := q.db.Query(ctx, fmt.Sprintf(cardsOfWorkersQuery, bulkIn(2, len(chunk))), args...)
		work, err := dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (card.Work, error) {
			var w card.Work
			var state string
			err := row.Scan(&w.Worker, &w.ID, &state, &w.Revision)
			w.State = card.State(state)
			return w, err
		}, err).AsList()
		out = append(out, work...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the cards of %d workers: %w", len(workers), err)
	}
	return out, nil
}

// ListCards returns cards by current priority, then age.
func (q *CardQuery) ListCards(ctx context.Context, f card.Filter) ([]card.Card, error) {
	var rows dbutil.Rows
	var err error
	if f.State != "" {
		rows, err = q.db.Query(ctx, listCardsByStateQuery, string(f.State), f.Limit)
	} else {
		rows, err = q.db.Query(ctx, listCardsQuery, f.Limit)
	}
	return dbutil.NewRowIterWithError(rows, scanCard, err).AsList()
}

// CardStates returns the state of each of the given cards that exists.
func (q *CardQuery) CardStates(ctx context.Context, ids []string) (map[string]card.State, error) {
	out := make(map[string]card.State, len(ids))
	for _, id := range ids {
		var state string
		err := q.db.QueryRow(ctx, cardStateQuery, id).Scan(&state)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return nil, fmt.Errorf("state of card %s: %w", id, err)
		}
		out[id] = card.State(state)
	}
	return out, nil
}

// UpdateCard writes the mutable fields of next if the card is still in
// prev's state and revision.
func (q *CardQuery) UpdateCard(ctx context.Context, next, prev card.Card) error {
	res, err := q.db.Exec(ctx, updateCardQuery, next.ID, string(next.Priority), next.RatifiedBy, next.RatifiedRevision,
		string(next.State), next.StateNote, next.Revision, next.UpdatedAt.UnixMilli(), string(prev.State), prev.Revision, next.Worker)
	if err != nil {
		return fmt.Errorf("update card %s: %w", next.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update card %s: %w: it changed meanwhile", next.ID, core.ErrConflict)
	}
	return nil
}

// CountCards counts the cards in a state.
func (q *CardQuery) CountCards(ctx context.Context, state card.State) (int, error) {
	var n int
	err := q.db.QueryRow(ctx, countCardsQuery, string(state)).Scan(&n)
	return n, err
}

func scanCard(row dbutil.Scannable) (card.Card, error) {
	var c card.Card
	var acceptance, dependsOn, specPriority, priority, state, trust string
	var createdAt, updatedAt int64
	err := row.Scan(&c.ID, &c.SetID, &c.Ref, &c.Spec.Goal, &acceptance, &specPriority, &dependsOn, &c.Spec.Budget,
		&c.Author, &c.RatifiedBy, &c.RatifiedRevision, &priority, &state, &c.StateNote, &c.Revision, &createdAt, &updatedAt, &c.Worker, &trust)
	if err != nil {
		return c, err
	}
	if c.Spec.Acceptance, err = parseStrings(acceptance); err != nil {
		return c, fmt.Errorf("card %s acceptance: %w", c.ID, err)
	}
	if c.Spec.DependsOn, err = parseStrings(dependsOn); err != nil {
		return c, fmt.Errorf("card %s depends_on: %w", c.ID, err)
	}
	c.Spec.Priority = card.Priority(specPriority)
	c.Priority = card.Priority(priority)
	c.State = card.State(state)
	c.SourceTrust = core.Trust(trust)
	c.CreatedAt = time.UnixMilli(createdAt)
	c.UpdatedAt = time.UnixMilli(updatedAt)
	return c, nil
}

// jsonStrings encodes a list of strings for a JSON text column.
func jsonStrings(list []string) string {
	b, _ := json.Marshal(nonNil(list)) // a []string always marshals
	return string(b)
}

// parseStrings decodes a JSON text column holding a list of strings.
func parseStrings(s string) ([]string, error) {
	var out []string
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}
