package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
)

const (
	decisionColumns = `id, card_id, question, options, checkpoint_branch, checkpoint_note, deadline, default_option,
		asked, status, option_no, answered_by, network, asked_at, remind_at, reminded_at, closed_at`
	insertDecisionQuery = `
		INSERT INTO card_decision (` + decisionColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`
	getDecisionQuery    = `SELECT ` + decisionColumns + ` FROM card_decision WHERE id = $1`
	latestDecisionQuery = `
		SELECT ` + decisionColumns + ` FROM card_decision WHERE card_id = $1
		ORDER BY asked_at DESC, CASE WHEN status = 'open' THEN 0 ELSE 1 END, closed_at DESC LIMIT 1`
	decisionsOfCardQuery = `SELECT ` + decisionColumns + ` FROM card_decision WHERE card_id = $1 ORDER BY asked_at, closed_at`
	updateDecisionQuery  = `
		UPDATE card_decision SET status = $2, option_no = $3, answered_by = $4, network = $5, reminded_at = $6,
		                         closed_at = $7
		WHERE id = $1 AND status = 'open'`
	dueDecisionsQuery = `
		SELECT ` + decisionColumns + ` FROM card_decision
		WHERE status = 'open' AND deadline > 0 AND (deadline <= $1 OR (reminded_at = 0 AND remind_at <= $1))
		ORDER BY deadline LIMIT $2`
	openDecisionsQuery = `SELECT ` + decisionColumns + ` FROM card_decision WHERE status = 'open' ORDER BY asked_at`
	// asked is a JSON list of user IDs, which hold no quote or backslash.
	moveAskedQuery = `UPDATE card_decision SET asked = REPLACE(asked, $1, $2) WHERE status = 'open' AND asked LIKE $3`
)

// DecisionQuery keeps workers' questions.
type DecisionQuery struct {
	db *dbutil.Database
}

var _ card.DecisionStore = (*DecisionQuery)(nil)

// InsertDecision writes a new question. A card with an open question
// already is refused by the database.
func (q *DecisionQuery) InsertDecision(ctx context.Context, d card.Decision) error {
	options, err := json.Marshal(nonNil(d.Options))
	if err != nil {
		return err
	}
	_, err = q.db.Exec(ctx, insertDecisionQuery, d.ID, d.CardID, d.Question, string(options), d.Checkpoint.Branch,
		d.Checkpoint.Note, millis(d.Deadline), d.DefaultOption, jsonStrings(d.Asked), string(d.Status), d.Option,
		d.AnsweredBy, d.Network, d.AskedAt.UnixMilli(), millis(d.RemindAt), millis(d.RemindedAt),
		millis(d.ClosedAt))
	if err != nil {
		return fmt.Errorf("insert question %s: %w", d.ID, err)
	}
	return nil
}

// Decision returns a question by id.
func (q *DecisionQuery) Decision(ctx context.Context, id string) (card.Decision, error) {
	d, err := scanDecision(q.db.QueryRow(ctx, getDecisionQuery, id))
	return d, notFound(err, "question "+id)
}

// LatestDecision returns the card's most recent question.
func (q *DecisionQuery) LatestDecision(ctx context.Context, cardID string) (card.Decision, error) {
	d, err := scanDecision(q.db.QueryRow(ctx, latestDecisionQuery, cardID))
	return d, notFound(err, "question on card "+cardID)
}

// DecisionsOfCard returns a card's questions, oldest first.
func (q *DecisionQuery) DecisionsOfCard(ctx context.Context, cardID string) ([]card.Decision, error) {
	rows, err := q.db.Query(ctx, decisionsOfCardQuery, cardID)
	return dbutil.NewRowIterWithError(rows, scanDecision, err).AsList()
}

// UpdateDecision writes the outcome and reminder fields of an open
// question; one no longer open is ErrConflict.
func (q *DecisionQuery) UpdateDecision(ctx context.Context, d card.Decision) error {
	res, err := q.db.Exec(ctx, updateDecisionQuery, d.ID, string(d.Status), d.Option, d.AnsweredBy, d.Network,
		millis(d.RemindedAt), millis(d.ClosedAt))
	if err != nil {
		return fmt.Errorf("update question %s: %w", d.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update question %s: %w: it is closed", d.ID, core.ErrConflict)
	}
	return nil
}

// DueDecisions returns up to limit open questions whose deadline or unsent
// reminder is due at now, soonest deadline first.
func (q *DecisionQuery) DueDecisions(ctx context.Context, now time.Time, limit int) ([]card.Decision, error) {
	rows, err := q.db.Query(ctx, dueDecisionsQuery, now.UnixMilli(), limit)
	return dbutil.NewRowIterWithError(rows, scanDecision, err).AsList()
}

// OpenDecisions returns every open question, oldest first.
// MoveAsked asks to, instead of from, the open questions from is asked.
func (q *DecisionQuery) MoveAsked(ctx context.Context, from, to string) (int, error) {
	quoted := `"` + from + `"`
	res, err := q.db.Exec(ctx, moveAskedQuery, quoted, `"`+to+`"`, "%"+quoted+"%")
	if err != nil {
		return 0, fmt.Errorf("move the questions asked of %s: %w", from, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (q *DecisionQuery) OpenDecisions(ctx context.Context) ([]card.Decision, error) {
	rows, err := q.db.Query(ctx, openDecisionsQuery)
	return dbutil.NewRowIterWithError(rows, scanDecision, err).AsList()
}

func scanDecision(row dbutil.Scannable) (card.Decision, error) {
	var d card.Decision
	var options, asked, status string
	var deadline, askedAt, remindAt, remindedAt, closedAt int64
	err := row.Scan(&d.ID, &d.CardID, &d.Question, &options, &d.Checkpoint.Branch, &d.Checkpoint.Note, &deadline,
		&d.DefaultOption, &asked, &status, &d.Option, &d.AnsweredBy, &d.Network, &askedAt, &remindAt, &remindedAt, &closedAt)
	if err != nil {
		return d, err
	}
	if d.Options, err = parseStrings(options); err != nil {
		return d, fmt.Errorf("question %s options: %w", d.ID, err)
	}
	if d.Asked, err = parseStrings(asked); err != nil {
		return d, fmt.Errorf("question %s asked: %w", d.ID, err)
	}
	d.Status = card.DecisionStatus(status)
	d.Deadline = timeOf(deadline)
	d.AskedAt = time.UnixMilli(askedAt)
	d.RemindAt = timeOf(remindAt)
	d.RemindedAt = timeOf(remindedAt)
	d.ClosedAt = timeOf(closedAt)
	return d, nil
}
