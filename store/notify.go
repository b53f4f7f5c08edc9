package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mau.fi/util/dbutil"
)

// The channels on which Jarvis processes sharing a PostgreSQL database
// tell each other what changed (LISTEN/NOTIFY), so that they need not
// wait for their next poll. Polling stays: a notification is lost while
// a listener is not connected.
const (
	// LeaseReleased is notified when a Jarvis releases the workspace lease
	// (a clean stop, `!sys restart`): a standby tries to take it at once.
	LeaseReleased = "jarvis_lease_released"
	// OutboxWork is notified when a notice is enqueued: the holder's sender
	// looks at once, whichever process wrote it.
	OutboxWork = "jarvis_outbox"
	// IntakeWork is notified when a Jarvis that does not hold the lease
	// stored an agent's report: the holder does what follows from it
	// (moves the notices it staged into the outbox, re-evaluates the
	// tripwires, reconciles the wake router).
	IntakeWork = "jarvis_intake"
)

// notify tells the listeners of channel, from the store named from (its
// instance): when the transaction ctx is in commits, or at once outside
// one. PostgreSQL delivers a channel's notifications of one transaction
// as one, so a transaction that enqueues many notices notifies once. On
// SQLite, one file on one host whose processes poll, it does nothing.
func notify(ctx context.Context, db *dbutil.Database, channel, from string) error {
	if db.Dialect != dbutil.Postgres {
		return nil
	}
	notified, _ := ctx.Value(notifiedKey{}).(map[string]bool)
	if notified[channel] {
		return nil
	}
	if _, err := db.Exec(ctx, "SELECT pg_notify($1, $2)", channel, from); err != nil {
		return fmt.Errorf("notify %s: %w", channel, err)
	}
	if notified != nil {
		notified[channel] = true
	}
	return nil
}

type notifiedKey struct{}

// withNotified gives one run of a transaction the record of the channels
// it notified.
func withNotified(ctx context.Context) context.Context {
	return context.WithValue(ctx, notifiedKey{}, map[string]bool{})
}

// Listen calls on[channel] for every notification on one of its channels
// until ctx ends, from a connection of its own outside the pool. A store
// does not hear its own notifications: its process has done, after the
// commit, what they ask (its outbox sender was woken, the lease it
// released is not to be taken back, the reports it stored as a standby
// are moved by whoever holds the lease). It calls
// each once more every time it connects, since what was notified while it
// was not listening is lost; a lost connection is made again after retry,
// and onError hears why it was lost. On SQLite it returns at once: there
// polling is all there is.
func (s *Store) Listen(ctx context.Context, on map[string]func(), retry time.Duration, onError func(error)) {
	if s.DB.Dialect != dbutil.Postgres || len(on) == 0 {
		return
	}
	for {
		err := s.listen(ctx, on)
		if ctx.Err() != nil {
			return
		}
		onError(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}

// listen connects, listens and calls on until the connection or ctx ends.
func (s *Store) listen(ctx context.Context, on map[string]func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pgConfig)
	if err != nil {
		return fmt.Errorf("connect to listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for channel := range on {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
			return fmt.Errorf("listen on %s: %w", channel, err)
		}
	}
	for _, fn := range on {
		fn()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return errors.Join(errors.New("wait for notifications"), err)
		}
		if fn, ok := on[n.Channel]; ok && n.Payload != s.instance {
			fn()
		}
	}
}
