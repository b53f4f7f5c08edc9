package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/oncall"
)

const (
	incidentColumns = `id, notice_key, room_id, body, kind, subject, opened_at, owner, claimed_at, resolved_at, tier, escalated_at, reminded_at,
		snoozed_by, snoozed_at, snoozed_until, parent, held_key, held_mentions`
	putIncidentQuery = `INSERT INTO incident (` + incidentColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
		ON CONFLICT (id) DO UPDATE SET notice_key = excluded.notice_key, room_id = excluded.room_id, body = excluded.body, kind = excluded.kind,
		subject = excluded.subject, opened_at = excluded.opened_at, owner = excluded.owner, claimed_at = excluded.claimed_at, resolved_at = excluded.resolved_at,
		tier = excluded.tier, escalated_at = excluded.escalated_at, reminded_at = excluded.reminded_at,
		snoozed_by = excluded.snoozed_by, snoozed_at = excluded.snoozed_at, snoozed_until = excluded.snoozed_until, parent = excluded.parent,
		held_key = excluded.held_key, held_mentions = excluded.held_mentions`
	getIncidentQuery   = `SELECT ` + incidentColumns + ` FROM incident WHERE id = $1`
	claimIncidentQuery = `UPDATE incident SET owner = $2, claimed_at = $3 WHERE id = $1 AND owner = '' AND resolved_at = 0`
	unclaimedQuery     = `SELECT ` + incidentColumns + ` FROM incident
		WHERE owner = '' AND resolved_at = 0 AND tier < $2 AND parent = '' AND opened_at <= $1 AND escalated_at <= $1 ORDER BY opened_at, id`
	escalateQuery   = `UPDATE incident SET tier = tier + 1, escalated_at = $3 WHERE id = $1 AND owner = '' AND resolved_at = 0 AND tier = $2`
	unremindedQuery = `SELECT ` + incidentColumns + ` FROM incident
		WHERE owner <> '' AND resolved_at = 0 AND claimed_at <= $1 AND reminded_at <= $1 ORDER BY claimed_at, id`
	remindQuery   = `UPDATE incident SET reminded_at = $3 WHERE id = $1 AND owner <> '' AND resolved_at = 0 AND reminded_at = $2`
	reclaimQuery  = `UPDATE incident SET owner = $3, claimed_at = $4 WHERE id = $1 AND owner = $2 AND owner <> '' AND resolved_at = 0`
	claimedBefore = `SELECT ` + incidentColumns + ` FROM incident
		WHERE owner <> '' AND resolved_at = 0 AND parent = '' AND claimed_at <= $1 ORDER BY claimed_at, id`
	lapseClaimQuery = `UPDATE incident SET owner = '', claimed_at = 0, escalated_at = $4, tier = CASE WHEN tier < 1 THEN 1 ELSE tier END
		WHERE id = $1 AND owner = $2 AND claimed_at = $3 AND resolved_at = 0`
	membersQuery    = `SELECT ` + incidentColumns + ` FROM incident WHERE parent = $1 ORDER BY opened_at, id`
	openOfKindQuery = `SELECT ` + incidentColumns + ` FROM incident WHERE kind = $1 AND resolved_at = 0 ORDER BY opened_at, id`
	openOfQuery     = `SELECT ` + incidentColumns + ` FROM incident
		WHERE kind = $1 AND subject = $2 AND resolved_at = 0 AND parent = '' ORDER BY opened_at, id LIMIT 1`
	openSinceQuery = `SELECT ` + incidentColumns + ` FROM incident
		WHERE kind = $1 AND resolved_at = 0 AND parent = '' AND opened_at >= $2 ORDER BY opened_at, id`
	// Nobody can claim an alert that was never posted: owner = '' lets
	// the open, unclaimed incidents' index serve.
	heldQuery = `SELECT ` + incidentColumns + ` FROM incident
		WHERE owner = '' AND resolved_at = 0 AND parent = '' AND held_key <> '' ORDER BY opened_at, id`
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
	mentions, err := json.Marshal(nonNil(inc.HeldMentions))
	if err != nil {
		return err
	}
	_, err = q.db.Exec(ctx, putIncidentQuery, inc.ID, inc.NoticeKey, inc.RoomID, inc.Body, inc.Kind, inc.Subject,
		inc.OpenedAt.UnixMilli(), inc.Owner, millis(inc.ClaimedAt), millis(inc.ResolvedAt), inc.Tier, millis(inc.EscalatedAt),
		millis(inc.RemindedAt), inc.SnoozedBy, millis(inc.SnoozedAt), millis(inc.SnoozedUntil), inc.Parent,
		inc.HeldKey, string(mentions))
	return err
}

// Incident returns one incident.
func (q *IncidentQuery) Incident(ctx context.Context, id string) (oncall.Incident, error) {
	inc, err := scanIncident(q.db.QueryRow(ctx, getIncidentQuery, id))
	return inc, notFound(err, "incident "+id)
}

// Unclaimed lists the open, unclaimed incidents that called fewer than
// tiers tiers and opened, and called the last, by before.
func (q *IncidentQuery) Unclaimed(ctx context.Context, before time.Time, tiers int) ([]oncall.Incident, error) {
	return q.list(ctx, unclaimedQuery, before.UnixMilli(), tiers)
}

// Unreminded lists the open, claimed incidents claimed, and last
// reminded, by before.
func (q *IncidentQuery) Unreminded(ctx context.Context, before time.Time) ([]oncall.Incident, error) {
	return q.list(ctx, unremindedQuery, before.UnixMilli())
}

// RemindIncident records a reminder of an open incident's owner, once per
// last reminder.
func (q *IncidentQuery) RemindIncident(ctx context.Context, id string, last, at time.Time) (bool, error) {
	return q.update(ctx, remindQuery, id, millis(last), at.UnixMilli())
}

// ReclaimIncident hands an open incident from its owner to another, or
// renews the owner's claim.
func (q *IncidentQuery) ReclaimIncident(ctx context.Context, id, from, to string, at time.Time) (bool, error) {
	return q.update(ctx, reclaimQuery, id, from, to, at.UnixMilli())
}

// ClaimedBefore lists the open incidents with no parent claimed, or
// last renewed, by before.
func (q *IncidentQuery) ClaimedBefore(ctx context.Context, before time.Time) ([]oncall.Incident, error) {
	return q.list(ctx, claimedBefore, before.UnixMilli())
}

// LapseClaim ends one claim on an open incident, once; the call of the
// admins that goes with it counts as their tier.
func (q *IncidentQuery) LapseClaim(ctx context.Context, id, owner string, claimedAt, escalateAt time.Time) (bool, error) {
	return q.update(ctx, lapseClaimQuery, id, owner, millis(claimedAt), escalateAt.UnixMilli())
}

// Members lists the incidents folded or grouped into incident id.
func (q *IncidentQuery) Members(ctx context.Context, id string) ([]oncall.Incident, error) {
	return q.list(ctx, membersQuery, id)
}

// OpenIncidents lists the open incidents of a kind.
func (q *IncidentQuery) OpenIncidents(ctx context.Context, kind string) ([]oncall.Incident, error) {
	return q.list(ctx, openOfKindQuery, kind)
}

// OpenIncidentOf returns the oldest open incident of kind about subject
// that has no parent.
func (q *IncidentQuery) OpenIncidentOf(ctx context.Context, kind, subject string) (oncall.Incident, error) {
	inc, err := scanIncident(q.db.QueryRow(ctx, openOfQuery, kind, subject))
	return inc, notFound(err, "open "+kind+" incident of "+subject)
}

// OpenSince lists the open incidents of kind that have no parent and
// opened at since or later.
func (q *IncidentQuery) OpenSince(ctx context.Context, kind string, since time.Time) ([]oncall.Incident, error) {
	return q.list(ctx, openSinceQuery, kind, since.UnixMilli())
}

// HeldIncidents lists the open incidents with no parent whose alert a
// silence holds.
func (q *IncidentQuery) HeldIncidents(ctx context.Context) ([]oncall.Incident, error) {
	return q.list(ctx, heldQuery)
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

// EscalateIncident records that an open, unclaimed incident called the
// tier after tier, once.
func (q *IncidentQuery) EscalateIncident(ctx context.Context, id string, tier int, at time.Time) (bool, error) {
	return q.update(ctx, escalateQuery, id, tier, at.UnixMilli())
}

func scanIncident(row interface{ Scan(...any) error }) (oncall.Incident, error) {
	var inc oncall.Incident
	var opened, claimed, resolved, escalated, reminded, snoozedAt, snoozedUntil int64
	var mentions string
	err := row.Scan(&inc.ID, &inc.NoticeKey, &inc.RoomID, &inc.Body, &inc.Kind, &inc.Subject, &opened, &inc.Owner, &claimed, &resolved,
		&inc.Tier, &escalated, &reminded, &inc.SnoozedBy, &snoozedAt, &snoozedUntil, &inc.Parent, &inc.HeldKey, &mentions)
	if err != nil {
		return inc, err
	}
	if err := json.Unmarshal([]byte(mentions), &inc.HeldMentions); err != nil {
		return inc, fmt.Errorf("incident %s held mentions: %w", inc.ID, err)
	}
	inc.OpenedAt, inc.ClaimedAt, inc.ResolvedAt = time.UnixMilli(opened), timeOf(claimed), timeOf(resolved)
	inc.EscalatedAt, inc.RemindedAt = timeOf(escalated), timeOf(reminded)
	inc.SnoozedAt, inc.SnoozedUntil = timeOf(snoozedAt), timeOf(snoozedUntil)
	return inc, nil
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
