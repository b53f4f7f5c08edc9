package store

import (
	"context"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/oncall"
)

const (
	incidentColumns  = `id, notice_key, room_id, body, kind, subject, opened_at, owner, claimed_at, resolved_at, escalated_at, parent`
	putIncidentQuery = `INSERT INTO incident (` + incidentColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (id) DO UPDATE SET notice_key = excluded.notice_key, room_id = excluded.room_id, body = excluded.body, kind = excluded.kind,
		subject = excluded.subject, opened_at = excluded.opened_at, owner = excluded.owner, claimed_at = excluded.claimed_at, resolved_at = excluded.resolved_at,
		escalated_at = excluded.escalated_at, parent = excluded.parent`
	getIncidentQuery   = `SELECT ` + incidentColumns + ` FROM incident WHERE id = $1`
	claimIncidentQuery = `UPDATE incident SET owner = $2, claimed_at = $3 WHERE id = $1 AND owner = '' AND resolved_at = 0`
	unclaimedQuery     = `SELECT ` + incidentColumns + ` FROM incident WHERE owner = '' AND resolved_at = 0 AND escalated_at = 0 AND parent = '' AND opened_at <= $1 ORDER BY opened_at, id`
	membersQuery       = `SELECT ` + incidentColumns + ` FROM incident WHERE parent = $1 ORDER BY opened_at, id`
	openOfKindQuery    = `SELECT ` + incidentColumns + ` FROM incident WHERE kind = $1 AND resolved_at = 0 ORDER BY opened_at, id`
	escalateQuery      = `UPDATE incident SET escalated_at = $2 WHERE id = $1 AND owner = '' AND resolved_at = 0 AND escalated_at = 0`
)

// IncidentQuery keeps the incidents behind the room's alerts.
type IncidentQuery struct {
	db *dbutil.Database
}

var _ oncall.Store = (*IncidentQuery)(nil)

// Incidents returns the incident queries.
func (s *Store) Incidents() *IncidentQuery { return &IncidentQuery{db: s.DB} }

// PutIncident writes an incident, replacing the one with its ID.
func (q *IncidentQuery) PutIncident(ctx context.Context, inc oncall.Incident) error {
	_, err := q.db.Exec(ctx, putIncidentQuery, inc.ID, inc.NoticeKey, inc.RoomID, inc.Body, inc.Kind, inc.Subject,
		inc.OpenedAt.UnixMilli(), inc.Owner, unixMilliOrZero(inc.ClaimedAt), unixMilliOrZero(inc.ResolvedAt), unixMilliOrZero(inc.EscalatedAt), inc.Parent)
	return err
}

// Incident returns one incident.
func (q *IncidentQuery) Incident(ctx context.Context, id string) (oncall.Incident, error) {
	inc, err := scanIncident(q.db.QueryRow(ctx, getIncidentQuery, id))
	return inc, notFound(err, "incident "+id)
}

// Unclaimed lists the open, unclaimed, not yet escalated incidents that
// opened by before.
func (q *IncidentQuery) Unclaimed(ctx context.Context, before time.Time) ([]oncall.Incident, error) {
	return q.list(ctx, unclaimedQuery, before.UnixMilli())
}

// Members lists the incidents folded or grouped into incident id.
func (q *IncidentQuery) Members(ctx context.Context, id string) ([]oncall.Incident, error) {
	return q.list(ctx, membersQuery, id)
}

// OpenIncidents lists the open incidents of a kind.
func (q *IncidentQuery) OpenIncidents(ctx context.Context, kind string) ([]oncall.Incident, error) {
	return q.list(ctx, openOfKindQuery, kind)
}

// list runs a query for incidents.
func (q *IncidentQuery) list(ctx context.Context, query string, args ...any) ([]oncall.Incident, error) {
	rows, err := q.db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []oncall.Incident
	for rows.Next() {
		inc, err := scanIncident(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, inc)
	}
	return out, rows.Err()
}

// EscalateIncident marks an open, unclaimed incident escalated, once.
func (q *IncidentQuery) EscalateIncident(ctx context.Context, id string, at time.Time) (bool, error) {
	return q.update(ctx, escalateQuery, id, at.UnixMilli())
}

func scanIncident(row interface{ Scan(...any) error }) (oncall.Incident, error) {
	var inc oncall.Incident
	var opened, claimed, resolved, escalated int64
	err := row.Scan(&inc.ID, &inc.NoticeKey, &inc.RoomID, &inc.Body, &inc.Kind, &inc.Subject, &opened, &inc.Owner, &claimed, &resolved, &escalated, &inc.Parent)
	inc.OpenedAt, inc.ClaimedAt, inc.ResolvedAt, inc.EscalatedAt = time.UnixMilli(opened), timeOrZero(claimed), timeOrZero(resolved), timeOrZero(escalated)
	return inc, err
}

// ClaimIncident makes owner the owner of an open, unclaimed incident.
func (q *IncidentQuery) ClaimIncident(ctx context.Context, id, owner string, at time.Time) (bool, error) {
	return q.update(ctx, claimIncidentQuery, id, owner, at.UnixMilli())
}

// update runs a conditional update and reports whether it changed a row.
func (q *IncidentQuery) update(ctx context.Context, query string, args ...any) (bool, error) {
	res, err := q.db.Exec(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
