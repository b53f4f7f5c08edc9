package store

import (
	"context"
)

const tripwireStatusCountsQuery = `SELECT status, COUNT(*) FROM tripwire_state WHERE status <> 'deleted' GROUP BY status`

// TripwireStatusCounts counts every citizen's tripwires by status, for
// `!sys status`.
func (s *Store) TripwireStatusCounts(ctx context.Context) (map[string]int, error) {
	rows, err := s.DB.Query(ctx, tripwireStatusCountsQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return nil, err
		}
		counts[status] = n
	}
	return counts, rows.Err()
}
