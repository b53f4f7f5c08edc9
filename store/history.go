package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
)

const (
	// historySourcesOfQuery takes the sources as one JSON array of [kind,
	// param] pairs: one statement for any number of them, which reads only
	// theirs.
	historySourcesOfQuery = `
		SELECT id, kind, param FROM history_source
		WHERE (kind, param) IN (SELECT value ->> 0, value ->> 1 FROM json_each($1))`
	historySourceIDsQuery    = `SELECT id FROM history_source ORDER BY id`
	historySourceQuery       = `SELECT id FROM history_source WHERE kind = $1 AND param = $2`
	insertHistorySourceQuery = `INSERT INTO history_source (kind, param) VALUES ($1, $2) RETURNING id`
	insertReadingsQuery      = `INSERT INTO source_reading (source_id, at, num, val) VALUES %s ON CONFLICT (source_id, at) DO NOTHING`
	readingRow               = `($%d, $%d, $%d, $%d)`
	// On PostgreSQL one statement for any number of readings, prepared once
	// per connection (see putHeartbeatsPGQuery), which also adds the
	// sources the history does not know yet and finds the ids of those it
	// does, by their (kind, param): one round trip, and no read of every
	// source. A source another transaction added meanwhile, unseen by this
	// one, is a conflict that SERIALIZABLE refuses (the store runs the
	// transaction again), not a reading dropped; READ COMMITTED waits for
	// that transaction and takes the source it added (the update that
	// changes nothing is what returns its id).
	insertReadingsPGQuery = `
		WITH r AS (
			SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::float8[], $5::text[]) AS r (kind, param, at, num, val)
		), known AS (
			SELECT s.id, s.kind, s.param FROM history_source s WHERE (s.kind, s.param) IN (SELECT kind, param FROM r)
		), added AS (
			INSERT INTO history_source (kind, param)
			SELECT DISTINCT kind, param FROM r WHERE (kind, param) NOT IN (SELECT kind, param FROM known)
			ON CONFLICT (kind, param) DO UPDATE SET kind = excluded.kind RETURNING id, kind, param
		)
		INSERT INTO source_reading (source_id, at, num, val)
		SELECT s.id, r.at, r.num, r.val FROM r JOIN (SELECT * FROM known UNION ALL SELECT * FROM added) s USING (kind, param)
		ON CONFLICT (source_id, at) DO NOTHING`
	historyPointsQuery = `
		SELECT at, num, val, bucket, min, max FROM source_reading
		WHERE source_id = $1 AND at >= $2 AND at < $3 ORDER BY at`
	latestPointsQuery = `
		SELECT at, num, val, bucket, min, max FROM (
			SELECT at, num, val, bucket, min, max FROM source_reading
			WHERE source_id = $1 AND at >= $2 AND at < $3 ORDER BY at DESC LIMIT $4
		) AS latest ORDER BY at`
	fullReadingsQuery = `
		SELECT at, num, val FROM source_reading
		WHERE source_id = $1 AND at < $2 AND NOT bucket ORDER BY at LIMIT $3`
	deleteFullReadingsQuery = `DELETE FROM source_reading WHERE source_id = $1 AND at >= $2 AND at <= $3 AND NOT bucket`
	bucketQuery             = `SELECT num, val, min, max FROM source_reading WHERE source_id = $1 AND at = $2 AND bucket`
	upsertBucketQuery       = `
		INSERT INTO source_reading (source_id, at, num, val, bucket, min, max) VALUES ($1, $2, $3, $4, true, $5, $6)
		ON CONFLICT (source_id, at) DO UPDATE SET num = excluded.num, val = excluded.val, min = excluded.min, max = excluded.max`
	pruneReadingsQuery = `
		DELETE FROM source_reading WHERE source_id = $1 AND at IN (
			SELECT at FROM source_reading WHERE source_id = $1 AND at < $2 ORDER BY at LIMIT $3)`
)

var _ history.Store = (*Store)(nil)

// AddReadings adds readings to the history (in the caller's transaction,
// if any); a second reading of a source in the same millisecond is
// dropped.
func (s *Store) AddReadings(ctx context.Context, readings []history.Reading) error {
	return writeReadings(ctx, s.DB, readings)
}

// historySourceIDs returns the ids of the sources of readings, adding
// those the history does not know yet (SQLite).
func historySourceIDs(ctx context.Context, db *dbutil.Database, readings []history.Reading) (map[core.SourceRef]int64, error) {
	ids := map[core.SourceRef]int64{}
	pairs := make([][2]string, len(readings))
	for i, r := range readings {
		pairs[i] = [2]string{r.Source.Kind, r.Source.Param}
	}
	of, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, historySourcesOfQuery, string(of))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var ref core.SourceRef
		if err := rows.Scan(&id, &ref.Kind, &ref.Param); err != nil {
			return nil, err
		}
		ids[ref] = id
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, r := range readings {
		if _, ok := ids[r.Source]; ok {
			continue
		}
		var id int64
		if err := db.QueryRow(ctx, insertHistorySourceQuery, r.Source.Kind, r.Source.Param).Scan(&id); err != nil {
			return nil, fmt.Errorf("add source %s: %w", r.Source, err)
		}
		ids[r.Source] = id
	}
	return ids, nil
}

// writeReadings adds readings to the history; a second reading of a source
// in the same millisecond is dropped.
func writeReadings(ctx context.Context, db *dbutil.Database, readings []history.Reading) error {
	if len(readings) == 0 {
		return nil
	}
	if db.Dialect == dbutil.Postgres {
		return writeReadingsPG(ctx, db, readings)
	}
	ids, err := historySourceIDs(ctx, db, readings)
	if err != nil {
		return err
	}
	const perRow = 4
	return bulkChunks(readings, perRow, func(chunk []history.Reading) error {
		args := make([]any, 0, len(chunk)*perRow)
		for _, r := range chunk {
			num, val, err := encodeReading(r.Value)
			if err != nil {
				return fmt.Errorf("reading of %s: %w", r.Source, err)
			}
			args = append(args, ids[r.Source], r.At.UnixMilli(), num, val)
		}
		_, err := db.Exec(ctx, fmt.Sprintf(insertReadingsQuery, bulkRows(readingRow, len(chunk), perRow, 0)), args...)
		return err
	})
}

// writeReadingsPG writes readings on PostgreSQL, in one statement.
func writeReadingsPG(ctx context.Context, db *dbutil.Database, readings []history.Reading) error {
	n := len(readings)
	kinds, params, at := make([]string, n), make([]string, n), make([]int64, n)
	nums, vals := make([]*float64, n), make([]*string, n)
	for i, r := range readings {
		num, val, err := encodeReading(r.Value)
		if err != nil {
			return fmt.Errorf("reading of %s: %w", r.Source, err)
		}
		kinds[i], params[i], at[i] = r.Source.Kind, r.Source.Param, r.At.UnixMilli()
		if f, ok := num.(float64); ok {
			nums[i] = &f
		}
		if v, ok := val.(string); ok {
			vals[i] = &v
		}
	}
	_, err := db.Exec(ctx, insertReadingsPGQuery, kinds, params, at, nums, vals)
	return err
}

// encodeReading splits a value into the num and val columns.
func encodeReading(v any) (num, val any, err error) {
	if f, ok := v.(float64); ok {
		return f, nil, nil
	}
	b, err := json.Marshal(v)
	return nil, string(b), err
}

func decodeReading(num *float64, val *string) (any, error) {
	if num != nil {
		return *num, nil
	}
	if val == nil {
		return nil, nil
	}
	var v any
	err := json.Unmarshal([]byte(*val), &v)
	return v, err
}

// Points returns the history of src from from up to to, oldest first.
func (s *Store) Points(ctx context.Context, src core.SourceRef, from, to time.Time) ([]history.Point, error) {
	return s.points(ctx, src, historyPointsQuery, from.UnixMilli(), to.UnixMilli())
}

// Latest returns at most limit of the newest points of src from from up
// to to, oldest first.
func (s *Store) Latest(ctx context.Context, src core.SourceRef, from, to time.Time, limit int) ([]history.Point, error) {
	return s.points(ctx, src, latestPointsQuery, from.UnixMilli(), to.UnixMilli(), limit)
}

// points reads the points of src a query selects; its first parameter is
// the source's id, args the others.
func (s *Store) points(ctx context.Context, src core.SourceRef, query string, args ...any) ([]history.Point, error) {
	var id int64
	err := s.DB.QueryRow(ctx, historySourceQuery, src.Kind, src.Param).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil // no reading of src yet
	case err != nil:
		return nil, fmt.Errorf("history of %s: %w", src, err)
	}
	rows, err := s.DB.Query(ctx, query, append([]any{id}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", src, err)
	}
	defer rows.Close()
	var points []history.Point
	for rows.Next() {
		var at int64
		var num, lo, hi *float64
		var val *string
		var p history.Point
		if err := rows.Scan(&at, &num, &val, &p.Bucket, &lo, &hi); err != nil {
			return nil, err
		}
		if p.Value, err = decodeReading(num, val); err != nil {
			return nil, fmt.Errorf("history of %s at %d: %w", src, at, err)
		}
		p.At = time.UnixMilli(at).UTC()
		if last, ok := p.Value.(float64); ok && p.Bucket {
			p.Min, p.Max = last, last
			if lo != nil {
				p.Min = *lo
			}
			if hi != nil {
				p.Max = *hi
			}
		}
		points = append(points, p)
	}
	return points, rows.Err()
}

// sourceIDs lists the ids of every source with a history.
func (s *Store) sourceIDs(ctx context.Context) ([]int64, error) {
	rows, err := s.DB.Query(ctx, historySourceIDsQuery)
	return dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[int64], err).AsList()
}

// DownsampleHistory turns up to limit readings taken before before (rounded
// down to a bucket's start) into buckets, and says how many readings went.
func (s *Store) DownsampleHistory(ctx context.Context, before time.Time, limit int) (int, error) {
	ids, err := s.sourceIDs(ctx)
	if err != nil {
		return 0, err
	}
	cut := before.Truncate(history.BucketWidth).UnixMilli()
	done := 0
	for _, id := range ids {
		if done >= limit {
			break
		}
		var n int
		err := s.tx(ctx, func(ctx context.Context) error {
			n, err = s.downsampleSource(ctx, id, cut, limit-done)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("downsample source %d: %w", id, err)
		}
		done += n
	}
	return done, nil
}

// bucket gathers the readings of one BucketWidth.
type bucket struct {
	start, first, last int64
	value              any
	min, max           *float64
}

func (s *Store) downsampleSource(ctx context.Context, id, cut int64, limit int) (int, error) {
	rows, err := s.DB.Query(ctx, fullReadingsQuery, id, cut, limit)
	if err != nil {
		return 0, err
	}
	width := history.BucketWidth.Milliseconds()
	var buckets []*bucket
	n := 0
	for rows.Next() {
		var at int64
		var num *float64
		var val *string
		if err := rows.Scan(&at, &num, &val); err != nil {
			rows.Close()
			return 0, err
		}
		n++
		v, err := decodeReading(num, val)
		if err != nil {
			rows.Close()
			return 0, fmt.Errorf("reading at %d: %w", at, err)
		}
		start := at - at%width
		if len(buckets) == 0 || buckets[len(buckets)-1].start != start {
			buckets = append(buckets, &bucket{start: start, first: at})
		}
		b := buckets[len(buckets)-1]
		b.last, b.value = at, v
		if num != nil {
			if b.min == nil || *num < *b.min {
				b.min = num
			}
			if b.max == nil || *num > *b.max {
				b.max = num
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, b := range buckets {
		if _, err := s.DB.Exec(ctx, deleteFullReadingsQuery, id, b.first, b.last); err != nil {
			return 0, err
		}
		if err := s.mergeBucket(ctx, id, b); err != nil {
			return 0, err
		}
		num, val, err := encodeReading(b.value)
		if err != nil {
			return 0, err
		}
		// The extremes are kept only where they differ from the last value:
		// at the default 5-minute tick a bucket holds one reading, and costs
		// no more than it did.
		lo, hi := b.min, b.max
		if last, ok := b.value.(float64); ok {
			if lo != nil && *lo == last {
				lo = nil
			}
			if hi != nil && *hi == last {
				hi = nil
			}
		}
		if _, err := s.DB.Exec(ctx, upsertBucketQuery, id, b.start, num, val, lo, hi); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// mergeBucket takes into b the bucket already written at its start, if any:
// readings that came after their bucket was written, or a bucket split
// between two batches.
func (s *Store) mergeBucket(ctx context.Context, id int64, b *bucket) error {
	var num, lo, hi *float64
	var val *string
	err := s.DB.QueryRow(ctx, bucketQuery, id, b.start).Scan(&num, &val, &lo, &hi)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	for _, x := range []*float64{num, lo, hi} {
		if x == nil {
			continue
		}
		if b.min == nil || *x < *b.min {
			b.min = x
		}
		if b.max == nil || *x > *b.max {
			b.max = x
		}
	}
	return nil
}

// PruneHistory deletes up to limit readings and buckets from before before.
func (s *Store) PruneHistory(ctx context.Context, before time.Time, limit int) (int, error) {
	ids, err := s.sourceIDs(ctx)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, id := range ids {
		if done >= limit {
			break
		}
		n, err := s.prune(ctx, pruneReadingsQuery, id, before.UnixMilli(), limit-done)
		if err != nil {
			return done, fmt.Errorf("prune source %d: %w", id, err)
		}
		done += n
	}
	return done, nil
}
