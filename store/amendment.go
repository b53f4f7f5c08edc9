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
	insertAmendmentQuery = `
		INSERT INTO card_amendment (card_id, revision, kind, text, priority, acceptance, decision_id, option_no,
		                            elapsed_ms, author, network, created_at, source_trust)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	amendmentsQuery = `
		SELECT card_id, revision, kind, text, priority, acceptance, decision_id, option_no, elapsed_ms, author,
		       network, created_at, source_trust
		FROM card_amendment WHERE card_id = $1 ORDER BY revision`
	putSignOffQuery = `
		INSERT INTO card_signoff (card_id, reviewer, signed_revision, signed_at, verdict, note) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (card_id, reviewer) DO UPDATE SET signed_revision = excluded.signed_revision, signed_at = excluded.signed_at,
			verdict = excluded.verdict, note = excluded.note`
	signOffsQuery = `
		SELECT card_id, reviewer, signed_revision, signed_at, verdict, note FROM card_signoff WHERE card_id = $1 ORDER BY reviewer`
)

// AmendmentQuery keeps amendments and reviewer sign-offs.
type AmendmentQuery struct {
	db *dbutil.Database
}

var _ card.AmendmentStore = (*AmendmentQuery)(nil)

// InsertAmendment writes an amendment; a revision the card has already
// is refused by the primary key.
func (q *AmendmentQuery) InsertAmendment(ctx context.Context, a card.Amendment) error {
	_, err := q.db.Exec(ctx, insertAmendmentQuery, a.CardID, a.Revision, string(a.Kind), a.Text, string(a.Priority),
		jsonStrings(a.Acceptance), a.DecisionID, a.Option, a.Elapsed.Milliseconds(), a.Author, a.Network,
		a.CreatedAt.UnixMilli(), string(a.SourceTrust))
	if err != nil {
		return fmt.Errorf("insert amendment %d of card %s: %w", a.Revision, a.CardID, err)
	}
	return nil
}

// Amendments returns a card's amendments by revision.
func (q *AmendmentQuery) Amendments(ctx context.Context, cardID string) ([]card.Amendment, error) {
	rows, err := q.db.Query(ctx, amendmentsQuery, cardID)
	return dbutil.NewRowIterWithError(rows, scanAmendment, err).AsList()
}

// PutSignOff records a reviewer's sign-off, replacing theirs.
func (q *AmendmentQuery) PutSignOff(ctx context.Context, s card.SignOff) error {
	_, err := q.db.Exec(ctx, putSignOffQuery, s.CardID, s.Reviewer, s.Revision, s.At.UnixMilli(), string(s.Verdict), s.Note)
	if err != nil {
		return fmt.Errorf("sign-off of %s on card %s: %w", s.Reviewer, s.CardID, err)
	}
	return nil
}

// SignOffs returns a card's sign-offs by reviewer.
func (q *AmendmentQuery) SignOffs(ctx context.Context, cardID string) ([]card.SignOff, error) {
	rows, err := q.db.Query(ctx, signOffsQuery, cardID)
	return dbutil.NewRowIterWithError(rows, scanSignOff, err).AsList()
}

func scanAmendment(row dbutil.Scannable) (card.Amendment, error) {
	var a card.Amendment
	var kind, priority, acceptance, trust string
	var elapsed, createdAt int64
	err := row.Scan(&a.CardID, &a.Revision, &kind, &a.Text, &priority, &acceptance, &a.DecisionID, &a.Option,
		&elapsed, &a.Author, &a.Network, &createdAt, &trust)
	if err != nil {
		return a, err
	}
	if a.Acceptance, err = parseStrings(acceptance); err != nil {
		return a, fmt.Errorf("amendment %d of card %s acceptance: %w", a.Revision, a.CardID, err)
	}
	if len(a.Acceptance) == 0 {
		a.Acceptance = nil
	}
	a.Kind = card.AmendmentKind(kind)
	a.SourceTrust = core.Trust(trust)
	a.Priority = card.Priority(priority)
	a.Elapsed = time.Duration(elapsed) * time.Millisecond
	a.CreatedAt = time.UnixMilli(createdAt)
	return a, nil
}

func scanSignOff(row dbutil.Scannable) (card.SignOff, error) {
	var s card.SignOff
	var at int64
	var verdict string
	err := row.Scan(&s.CardID, &s.Reviewer, &s.Revision, &at, &verdict, &s.Note)
	s.At, s.Verdict = time.UnixMilli(at), card.Verdict(verdict)
	return s, err
}
