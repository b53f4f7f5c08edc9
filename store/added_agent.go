package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

const (
	addedAgentColumns    = `name, cadence, grace, schedule, time_zone, depends_on, added_by, added_at`
	addedAgentsQuery     = `SELECT ` + addedAgentColumns + ` FROM added_agent ORDER BY name_key`
	addedAgentKnownQuery = `SELECT COUNT(*) FROM added_agent WHERE name_key = $1`
	putAddedAgentQuery   = `INSERT INTO added_agent (name_key, ` + addedAgentColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (name_key) DO UPDATE SET name = excluded.name, cadence = excluded.cadence, grace = excluded.grace,
			schedule = excluded.schedule, time_zone = excluded.time_zone, depends_on = excluded.depends_on,
			added_by = excluded.added_by, added_at = excluded.added_at`
	deleteAddedAgentQuery = `DELETE FROM added_agent WHERE name_key = $1`
)

var _ fleet.AgentStore = (*AddedAgentQuery)(nil)

// AddedAgentQuery keeps the agents added over the API or the CLI.
type AddedAgentQuery struct{ db *dbutil.Database }

// AddedAgents returns the agents added over the API or the CLI.
func (s *Store) AddedAgents() *AddedAgentQuery { return &AddedAgentQuery{db: s.DB} }

// AddedAgents lists the added agents by name.
func (q *AddedAgentQuery) AddedAgents(ctx context.Context) ([]fleet.AddedAgent, error) {
	rows, err := q.db.Query(ctx, addedAgentsQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []fleet.AddedAgent
	for rows.Next() {
		var a fleet.AddedAgent
		var cadence, grace, at int64
		var deps string
		if err := rows.Scan(&a.Name, &cadence, &grace, &a.Schedule, &a.TimeZone, &deps, &a.By, &at); err != nil {
			return nil, err
		}
		a.Cadence, a.Grace, a.At = time.Duration(cadence)*time.Millisecond, time.Duration(grace)*time.Millisecond, time.UnixMilli(at).UTC()
		if deps != "" {
			a.DependsOn = strings.Split(deps, ",")
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// PutAddedAgent adds an agent or replaces the one of the same name in any
// case, and reports whether it is new.
func (q *AddedAgentQuery) PutAddedAgent(ctx context.Context, a fleet.AddedAgent) (bool, error) {
	key := strings.ToUpper(a.Name)
	var n int
	if err := q.db.QueryRow(ctx, addedAgentKnownQuery, key).Scan(&n); err != nil {
		return false, err
	}
	_, err := q.db.Exec(ctx, putAddedAgentQuery, key, a.Name, a.Cadence.Milliseconds(), a.Grace.Milliseconds(), a.Schedule, a.TimeZone,
		strings.Join(a.DependsOn, ","), a.By, a.At.UnixMilli())
	return n == 0, err
}

// DeleteAddedAgent removes the added agent of the name, in any case.
func (q *AddedAgentQuery) DeleteAddedAgent(ctx context.Context, name string) error {
	res, err := q.db.Exec(ctx, deleteAddedAgentQuery, strings.ToUpper(name))
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		err = fmt.Errorf("agent %s: %w", name, core.ErrNotFound)
	}
	return err
}
