package store

import (
	"context"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/oncall"
)

const (
	incidentColumns  = `id, notice_key, room_id, body, kind, subject, opened_at, owner, claimed_at, resolved_at`
	putIncidentQuery = `INSERT INTO incident (` + incidentColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (id) DO UPDATE SET notice_key = excluded.notice_key, room_id = excluded.room_id, body = excluded.body, kind = excluded.kind,
		subject = excluded.subject, opened_at = excluded.opened_at, owner = excluded.owner, claimed_at = excluded.claimed_at, resolved_at = excluded.resolved_at`
	getIncidentQuery   = `SELECT ` + incidentColumns + ` FROM incident WHERE id = $1`
	claimIncidentQuery = `UPDATE incident SET owner = $2, claimed_at = $3 WHERE id = $1 AND owner = '' AND resolved_at = 0`
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
		inc.OpenedAt.UnixMilli(), inc.Owner, unixMilliOrZero(inc.ClaimedAt), unixMilliOrZero(inc.ResolvedAt))
	return err
}

// Incident returns one incident.
func (q *IncidentQuery) Incident(ctx context.Context, id string) (oncall.Incident, error) {
	var inc oncall.Incident
	var opened, claimed, resolved int64
	err := q.db.QueryRow(ctx, getIncidentQuery, id).Scan(&inc.ID, &inc.NoticeKey, &inc.RoomID, &inc.Body, &inc.Kind, &inc.Subject,
		&opened, &inc.Owner, &claimed, &resolved)
	inc.OpenedAt, inc.ClaimedAt, inc.ResolvedAt = time.UnixMilli(opened), timeOrZero(claimed), timeOrZero(resolved)
	return inc, notFound(err, "incident "+id)
}

// ClaimIncident makes owner the owner of an open, unclaimed incident.
func (q *IncidentQuery) ClaimIncident(ctx context.Context, id, owner string, at time.Time) (bool, error) {
	res, err := q.db.Exec(ctx, claimIncidentQuery, id, owner, at.UnixMilli())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
