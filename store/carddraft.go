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
	addDraftQuery = `
		INSERT INTO card_draft (person, ref, draft_id, seq, goal, acceptance, priority, depends_on, budget, added_at,
		                        source_trust)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	draftsQuery = `
		SELECT ref, draft_id, seq, goal, acceptance, priority, depends_on, budget, added_at, source_trust
		FROM card_draft WHERE person = $1 ORDER BY seq`
	dropDraftQuery   = `DELETE FROM card_draft WHERE person = $1 AND ref = $2`
	clearDraftsQuery = `DELETE FROM card_draft WHERE person = $1`
)

// CardDraftQuery keeps each person's draft cards.
type CardDraftQuery struct {
	db *dbutil.Database
}

var _ card.DraftStore = (*CardDraftQuery)(nil)

// AddDraft writes a draft card of a person.
func (q *CardDraftQuery) AddDraft(ctx context.Context, person string, d card.Draft) error {
	_, err := q.db.Exec(ctx, addDraftQuery, person, d.Ref, d.DraftID, d.Seq, d.Goal, jsonStrings(d.Acceptance),
		string(d.Priority), jsonStrings(d.DependsOn), d.Budget, d.AddedAt.UnixMilli(), string(d.SourceTrust))
	if err != nil {
		return fmt.Errorf("add draft %s of %s: %w", d.Ref, person, err)
	}
	return nil
}

// Drafts returns a person's drafts in the order added.
func (q *CardDraftQuery) Drafts(ctx context.Context, person string) ([]card.Draft, error) {
	rows, err := q.db.Query(ctx, draftsQuery, person)
	return dbutil.NewRowIterWithError(rows, scanDraft, err).AsList()
}

// DropDraft removes one draft by its ref.
func (q *CardDraftQuery) DropDraft(ctx context.Context, person, ref string) error {
	res, err := q.db.Exec(ctx, dropDraftQuery, person, ref)
	if err != nil {
		return fmt.Errorf("drop draft %s of %s: %w", ref, person, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("draft %s of %s: %w", ref, person, core.ErrNotFound)
	}
	return nil
}

// ClearDrafts removes all of a person's drafts and says how many.
func (q *CardDraftQuery) ClearDrafts(ctx context.Context, person string) (int, error) {
	res, err := q.db.Exec(ctx, clearDraftsQuery, person)
	if err != nil {
		return 0, fmt.Errorf("clear drafts of %s: %w", person, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func scanDraft(row dbutil.Scannable) (card.Draft, error) {
	var d card.Draft
	var acceptance, priority, dependsOn, trust string
	var addedAt int64
	err := row.Scan(&d.Ref, &d.DraftID, &d.Seq, &d.Goal, &acceptance, &priority, &dependsOn, &d.Budget, &addedAt, &trust)
	if err != nil {
		return d, err
	}
	if d.Acceptance, err = parseStrings(acceptance); err != nil {
		return d, fmt.Errorf("draft %s acceptance: %w", d.Ref, err)
	}
	if d.DependsOn, err = parseStrings(dependsOn); err != nil {
		return d, fmt.Errorf("draft %s depends_on: %w", d.Ref, err)
	}
	d.Priority = card.Priority(priority)
	d.SourceTrust = core.Trust(trust)
	d.AddedAt = time.UnixMilli(addedAt)
	return d, nil
}
