package store

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
)

const (
	approvalColumns = `id, agent, idem_key, fingerprint, action, reason, options, approver, asked, deadline, default_to,
		status, option_no, defaulted, decided_by, network, requested_at, decided_at`
	insertApprovalQuery = `
		INSERT INTO approval (` + approvalColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`
	getApprovalQuery    = `SELECT ` + approvalColumns + ` FROM approval WHERE id = $1`
	approvalByKeyQuery  = `SELECT ` + approvalColumns + ` FROM approval WHERE agent = $1 AND idem_key = $2`
	decideApprovalQuery = `
		UPDATE approval SET status = $2, option_no = $3, defaulted = $4, decided_by = $5, network = $6, decided_at = $7
		WHERE id = $1 AND status = 'pending'`
	dueApprovalsQuery = `
		SELECT ` + approvalColumns + ` FROM approval
		WHERE status = 'pending' AND deadline > 0 AND deadline <= $1 ORDER BY deadline LIMIT $2`
	pendingApprovalsQuery = `SELECT ` + approvalColumns + ` FROM approval WHERE status = 'pending' ORDER BY requested_at, id`
	countApprovalsQuery   = `
		SELECT COALESCE(SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN requested_at > $2 THEN 1 ELSE 0 END), 0)
		FROM approval WHERE agent = $1 AND (status = 'pending' OR requested_at > $2)`
	moveApproverQuery = `
		UPDATE approval SET approver = CASE WHEN approver = $1 THEN $2 ELSE approver END, asked = REPLACE(asked, $3, $4)
		WHERE status = 'pending' AND (approver = $1 OR asked LIKE $5)`
)

// ApprovalQuery keeps agents' approval requests.
type ApprovalQuery struct {
	db *dbutil.Database
}

var _ approval.Store = (*ApprovalQuery)(nil)

// Approvals returns the approval requests' queries.
func (s *Store) Approvals() *ApprovalQuery { return &ApprovalQuery{db: s.DB} }

// InsertApproval writes a new request.
func (q *ApprovalQuery) InsertApproval(ctx context.Context, a approval.Approval) error {
	_, err := q.db.Exec(ctx, insertApprovalQuery, a.ID, a.Agent, a.Key, a.Fingerprint, a.Action, a.Reason,
		jsonStrings(a.Options), a.Approver, jsonStrings(a.Asked), millis(a.Deadline), a.Default, string(a.Status),
		a.Option, a.Defaulted, a.DecidedBy, a.Network, a.RequestedAt.UnixMilli(), millis(a.DecidedAt))
	if err != nil {
		return fmt.Errorf("insert approval %s: %w", a.ID, err)
	}
	return nil
}

// Approval returns a request by id.
func (q *ApprovalQuery) Approval(ctx context.Context, id string) (approval.Approval, error) {
	a, err := scanApproval(q.db.QueryRow(ctx, getApprovalQuery, id))
	return a, notFound(err, "approval "+id)
}

// ApprovalByKey returns an agent's request by its idempotency key.
func (q *ApprovalQuery) ApprovalByKey(ctx context.Context, agent, key string) (approval.Approval, error) {
	a, err := scanApproval(q.db.QueryRow(ctx, approvalByKeyQuery, agent, key))
	return a, notFound(err, "approval with key "+key)
}

// DecideApproval writes the outcome of a pending request; one no longer
// pending is ErrConflict.
func (q *ApprovalQuery) DecideApproval(ctx context.Context, a approval.Approval) error {
	res, err := q.db.Exec(ctx, decideApprovalQuery, a.ID, string(a.Status), a.Option, a.Defaulted, a.DecidedBy, a.Network,
		millis(a.DecidedAt))
	if err != nil {
		return fmt.Errorf("decide approval %s: %w", a.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("decide approval %s: %w: it is no longer pending", a.ID, core.ErrConflict)
	}
	return nil
}

// DueApprovals returns up to limit pending requests whose deadline has
// come at now, soonest first.
func (q *ApprovalQuery) DueApprovals(ctx context.Context, now time.Time, limit int) ([]approval.Approval, error) {
	rows, err := q.db.Query(ctx, dueApprovalsQuery, now.UnixMilli(), limit)
	return dbutil.NewRowIterWithError(rows, scanApproval, err).AsList()
}

// PendingApprovals returns every pending request, oldest first.
func (q *ApprovalQuery) PendingApprovals(ctx context.Context) ([]approval.Approval, error) {
	rows, err := q.db.Query(ctx, pendingApprovalsQuery)
	return dbutil.NewRowIterWithError(rows, scanApproval, err).AsList()
}

func scanApproval(row dbutil.Scannable) (approval.Approval, error) {
	var a approval.Approval
	var options, asked, status string
	var deadline, requestedAt, decidedAt int64
	err := row.Scan(&a.ID, &a.Agent, &a.Key, &a.Fingerprint, &a.Action, &a.Reason, &options, &a.Approver, &asked,
		&deadline, &a.Default, &status, &a.Option, &a.Defaulted, &a.DecidedBy, &a.Network, &requestedAt, &decidedAt)
	if err != nil {
		return a, err
	}
	if a.Options, err = parseStrings(options); err != nil {
		return a, fmt.Errorf("approval %s options: %w", a.ID, err)
	}
	if a.Asked, err = parseStrings(asked); err != nil {
		return a, fmt.Errorf("approval %s asked: %w", a.ID, err)
	}
	if len(a.Options) == 0 {
		a.Options = nil
	}
	a.Status = approval.Status(status)
	a.Deadline = timeOf(deadline)
	a.RequestedAt = time.UnixMilli(requestedAt)
	a.DecidedAt = timeOf(decidedAt)
	return a, nil
}

// MoveApprover makes to the approver, and one of the people asked,
// instead of from, in every pending request that names or asks from.
func (q *ApprovalQuery) MoveApprover(ctx context.Context, from, to string) (int, error) {
	quoted := `"` + from + `"`
	res, err := q.db.Exec(ctx, moveApproverQuery, from, to, quoted, `"`+to+`"`, "%"+quoted+"%")
	if err != nil {
		return 0, fmt.Errorf("move the requests asked of %s: %w", from, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// CountApprovals says how many of the agent's requests are pending, and how
// many it made after since.
func (q *ApprovalQuery) CountApprovals(ctx context.Context, agent string, since time.Time) (pending, recent int, err error) {
	err = q.db.QueryRow(ctx, countApprovalsQuery, agent, since.UnixMilli()).Scan(&pending, &recent)
	if err != nil {
		return 0, 0, fmt.Errorf("count the approval requests of %s: %w", agent, err)
	}
	return pending, recent, nil
}
