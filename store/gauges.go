package store

import (
	"context"
	"fmt"
)

const (
	breakersByStateQuery   = `SELECT state, COUNT(*) FROM breaker GROUP BY state`
	tripwiresByStatusQuery = `SELECT status, COUNT(*) FROM tripwire_state WHERE status <> 'deleted' GROUP BY status`
	// An incident folded or grouped into another counts once, as its
	// parent: the alert people see.
	openIncidentsQuery = `SELECT COUNT(*) FROM incident WHERE resolved_at = 0 AND parent = ''`
)

// Gauges are what an operator watches of the workspace, counted when
// /metrics is read.
type Gauges struct {
	// Breakers counts the agents' circuit breakers by state (closed,
	// open, half-open).
	Breakers map[string]int
	// Tripwires counts the tripwires that are not deleted, by status
	// (armed, tripped, disabled, quarantined).
	Tripwires map[string]int
	// OpenIncidents counts the alerts not yet resolved.
	OpenIncidents int
}

// Gauges counts them.
func (s *Store) Gauges(ctx context.Context) (Gauges, error) {
	g := Gauges{Breakers: map[string]int{}, Tripwires: map[string]int{}}
	for _, count := range []struct {
		query string
		into  map[string]int
	}{{breakersByStateQuery, g.Breakers}, {tripwiresByStatusQuery, g.Tripwires}} {
		rows, err := s.DB.Query(ctx, count.query)
		if err != nil {
			return g, fmt.Errorf("gauges: %w", err)
		}
		for rows.Next() {
			var state string
			var n int
			if err := rows.Scan(&state, &n); err != nil {
				rows.Close()
				return g, fmt.Errorf("gauges: %w", err)
			}
			count.into[state] = n
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return g, fmt.Errorf("gauges: %w", err)
		}
	}
	if err := s.DB.QueryRow(ctx, openIncidentsQuery).Scan(&g.OpenIncidents); err != nil {
		return g, fmt.Errorf("gauges: %w", err)
	}
	return g, nil
}
