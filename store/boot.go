package store

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/watchdog"
)

const (
	recordJarvisBootQuery = `INSERT INTO jarvis_boot (id, host, version, started_at) VALUES ($1, $2, $3, $4)`
	pruneJarvisBootsQuery = `
		DELETE FROM jarvis_boot WHERE id NOT IN (
			SELECT id FROM jarvis_boot ORDER BY started_at DESC, id DESC LIMIT $1)`
	markJarvisStoppedQuery = `UPDATE jarvis_boot SET stopped_at = $1 WHERE id = $2`
	jarvisBootsSinceQuery  = `
		SELECT id, host, version, started_at, stopped_at FROM jarvis_boot
		WHERE started_at >= $1 ORDER BY started_at DESC, id DESC`
)

var _ watchdog.BootStore = (*Store)(nil)

// RecordBoot stores a start of Jarvis and keeps the newest
// watchdog.KeepBoots.
func (s *Store) RecordBoot(ctx context.Context, b watchdog.Boot) error {
	err := s.InTx(ctx, func(ctx context.Context) error {
		if _, err := s.DB.Exec(ctx, recordJarvisBootQuery, b.ID, b.Host, b.Version, b.StartedAt.UnixMilli()); err != nil {
			return err
		}
		_, err := s.DB.Exec(ctx, pruneJarvisBootsQuery, watchdog.KeepBoots)
		return err
	})
	if err != nil {
		return fmt.Errorf("record boot: %w", err)
	}
	return nil
}

// MarkStopped records a boot's clean stop.
func (s *Store) MarkStopped(ctx context.Context, id string, at time.Time) error {
	if _, err := s.DB.Exec(ctx, markJarvisStoppedQuery, at.UnixMilli(), id); err != nil {
		return fmt.Errorf("mark boot %s stopped: %w", id, err)
	}
	return nil
}

// BootsSince returns the boots started at or after since, newest first.
func (s *Store) BootsSince(ctx context.Context, since time.Time) ([]watchdog.Boot, error) {
	rows, err := s.DB.Query(ctx, jarvisBootsSinceQuery, since.UnixMilli())
	return dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (watchdog.Boot, error) {
		var b watchdog.Boot
		var started, stopped int64
		err := row.Scan(&b.ID, &b.Host, &b.Version, &started, &stopped)
		b.StartedAt = time.UnixMilli(started)
		if stopped != 0 {
			b.StoppedAt = time.UnixMilli(stopped)
		}
		return b, err
	}, err).AsList()
}
