package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

const (
	insertSkipsQuery = `INSERT INTO tripwire_skip (tripwire_id, at, reason, detail) VALUES %s`
	skipRow          = `($%d, $%d, $%d, $%d)`
	skipCountsQuery  = `
		SELECT reason, COUNT(*) FROM tripwire_skip WHERE tripwire_id = $1 AND at >= $2 GROUP BY reason`
	skipLatestQuery = `
		SELECT tripwire_id, at, reason, detail FROM tripwire_skip WHERE tripwire_id = $1 AND at >= $2
		ORDER BY seq DESC LIMIT $3`
	skipKeptQuery      = `SELECT COUNT(*), COALESCE(MIN(at), 0) FROM tripwire_skip WHERE tripwire_id = $1`
	pruneSkipsQuery    = `DELETE FROM tripwire_skip WHERE tripwire_id IN (%s)`
	skipsPerInsertArgs = 4
)

// writeSkips logs a pass's skipped evaluations and cuts the log of each
// tripwire in trim back to its newest keep.
func (q *TripwireQuery) writeSkips(ctx context.Context, skips []tripwire.Skip, trim []string, keep int) error {
	err := bulkChunks(skips, skipsPerInsertArgs, func(chunk []tripwire.Skip) error {
		args := make([]any, 0, len(chunk)*skipsPerInsertArgs)
		for _, s := range chunk {
			args = append(args, s.TripwireID, s.Timestamp.UnixMilli(), string(s.Reason), s.Detail)
		}
		_, err := q.db.Exec(ctx, fmt.Sprintf(insertSkipsQuery, bulkRows(skipRow, len(chunk), skipsPerInsertArgs, 0)), args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("write %d skips: %w", len(skips), err)
	}
	if err := q.trim(ctx, "tripwire_skip", "tripwire_id", trim, keep); err != nil {
		return fmt.Errorf("trim tripwire_skip: %w", err)
	}
	return nil
}

// SkipLog reads a tripwire's skip log: the counts since since, up to
// limit of the latest skips since then (oldest first), and how many skips
// the log keeps for it in all and since when.
func (q *TripwireQuery) SkipLog(ctx context.Context, id string, since time.Time, limit int) (tripwire.SkipLogRead, error) {
	read := tripwire.SkipLogRead{Counts: map[tripwire.SkipReason]int{}}
	rows, err := q.db.Query(ctx, skipCountsQuery, id, since.UnixMilli())
	err = dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (struct{}, error) {
		var reason string
		var n int
		err := row.Scan(&reason, &n)
		read.Counts[tripwire.SkipReason(reason)] = n
		return struct{}{}, err
	}, err).Iter(func(struct{}) (bool, error) { return true, nil })
	if err != nil {
		return read, fmt.Errorf("count skips: %w", err)
	}
	rows, err = q.db.Query(ctx, skipLatestQuery, id, since.UnixMilli(), limit)
	read.Latest, err = dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (tripwire.Skip, error) {
		var s tripwire.Skip
		var at int64
		err := row.Scan(&s.TripwireID, &at, &s.Reason, &s.Detail)
		s.Timestamp = timeOf(at)
		return s, err
	}, err).AsList()
	if err != nil {
		return read, fmt.Errorf("read skips: %w", err)
	}
	slices.Reverse(read.Latest)
	var oldest int64
	if err := q.db.QueryRow(ctx, skipKeptQuery, id).Scan(&read.Kept, &oldest); err != nil {
		return read, fmt.Errorf("count kept skips: %w", err)
	}
	read.Oldest = timeOf(oldest)
	return read, nil
}
