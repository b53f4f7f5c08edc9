// Package lease is the workspace lease: a compare-and-swap row with epochs
// that lets exactly one Jarvis act for a workspace.
package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// MinLeaseTTL is the shortest lease the configuration accepts.
const MinLeaseTTL = 3 * time.Second

// Config is the workspace section of the configuration.
type Config struct {
	// WorkspaceID names the workspace whose lease this Jarvis takes.
	WorkspaceID string
	// TTL is how long the lease lasts without renewal; the holder renews
	// it every TTL/3.
	TTL time.Duration
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case strings.TrimSpace(c.WorkspaceID) == "":
		return core.Invalid("workspace.id", "is required")
	case c.TTL < MinLeaseTTL:
		return core.Invalid("workspace.lease_ttl", "must be at least %s, not %s", MinLeaseTTL, c.TTL)
	}
	return nil
}

// Record is the workspace lease as stored: who holds it, under which
// epoch, since when and until when.
type Record struct {
	WorkspaceID string
	Holder      string
	Epoch       int64
	AcquiredAt  time.Time
	ExpiresAt   time.Time
}

// Store keeps the workspace lease. Every method is a single
// compare-and-swap, so two instances racing for the lease cannot both win.
//
// now is the caller's clock. A store shared by several hosts judges time
// by its own clock instead, so that a host whose clock is off cannot take
// over a live lease; it then reads expires only as a length, expires
// minus now.
type Store interface {
	// Acquire gives the lease to holder until expires when there is no
	// lease, when the lease expired at now, or when holder holds it already.
	// A new holder, or the same one after its lease expired, gets the next
	// epoch (1 for the first lease); a holder still holding keeps its epoch.
	// It returns the lease as it stands afterwards; ok is false when another
	// holder's lease is live, and the record is then theirs.
	Acquire(ctx context.Context, workspaceID, holder string, now, expires time.Time) (rec Record, ok bool, err error)
	// Renew extends the lease to expires if holder still holds it with
	// epoch and it is live at now; otherwise it returns ErrStaleEpoch.
	Renew(ctx context.Context, workspaceID, holder string, epoch int64, now, expires time.Time) error
	// Release ends the lease at now if holder still holds it with epoch.
	// The epoch stays in the record, so it is never handed out again.
	Release(ctx context.Context, workspaceID, holder string, epoch int64, now time.Time) error
	// Get returns the lease, or ErrNotFound when none was ever taken.
	Get(ctx context.Context, workspaceID string) (Record, error)
	// Live returns the lease if it has not expired at now (judged by the
	// store's clock when it keeps one), or ErrNotFound.
	Live(ctx context.Context, workspaceID string, now time.Time) (Record, error)
	// Fence returns ErrStaleEpoch unless holder holds the lease with epoch
	// and it is live at now. Inside a transaction it also keeps the lease
	// from changing hands until the transaction ends.
	Fence(ctx context.Context, workspaceID, holder string, epoch int64, now time.Time) error
}

// HeldError says who holds the workspace lease that was refused. It
// is an ErrLeaseHeld.
type HeldError struct {
	Lease Record
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%v: %s holds it since %s (epoch %d, until %s)", core.ErrLeaseHeld, e.Lease.Holder,
		e.Lease.AcquiredAt.UTC().Format(time.RFC3339), e.Lease.Epoch, e.Lease.ExpiresAt.UTC().Format(time.RFC3339))
}

// Unwrap makes every LeaseHeldError an ErrLeaseHeld.
func (e *HeldError) Unwrap() error { return core.ErrLeaseHeld }

// Lease is this Jarvis's hold on the workspace lease: exactly one Jarvis
// per workspace acts, the one whose epoch is current. The outbox sender
// calls Check before every send, and chat-driven writes call Fence inside
// their transaction.
type Lease struct {
	cfg  Config
	deps Deps

	mu      sync.Mutex
	held    bool
	epoch   int64
	expires time.Time
}

// Deps are what the lease works with.
type Deps struct {
	// Holder names this Jarvis. It must be unique to this process (for
	// example host name, process id and a random suffix), so that a
	// restarted Jarvis never mistakes an old lease for its own.
	Holder string
	Store  Store
	Tx     core.Transactor
	Outbox core.Outbox
	Clock  core.Clock
	// Room, when set, gets a notice every time this Jarvis takes the lease
	// under a new epoch, written in the same transaction.
	Room string
	// After, when set, waits between rounds of Run in place of time.After
	// (tests).
	After func(time.Duration) <-chan time.Time
	// Released, when set, tells Run that another Jarvis released the lease
	// (on PostgreSQL, by LISTEN/NOTIFY): Run tries to take it at once, not
	// at its next round.
	Released <-chan struct{}
	// OnError, when set, hears the errors Run meets other than the lease
	// being held by someone else (a database that does not answer).
	OnError func(error)
	// OnRound, when set, hears the end of every round of Run, whether the
	// lease is held by this Jarvis: the loop every Jarvis, holder or
	// standby, runs for as long as it lives is still going (systemd's
	// watchdog).
	OnRound func(held bool)
}

// New returns the lease service for one running Jarvis.
func New(cfg Config, deps Deps) *Lease {
	if deps.After == nil {
		deps.After = time.After
	}
	return &Lease{cfg: cfg, deps: deps}
}

// Holder returns the name this Jarvis holds the lease under.
func (l *Lease) Holder() string { return l.deps.Holder }

// Acquire takes the workspace lease, or renews it when this Jarvis holds it
// already, and returns the epoch. When another Jarvis holds a live lease it
// returns a *LeaseHeldError naming it.
func (l *Lease) Acquire(ctx context.Context) (int64, error) {
	now := l.deps.Clock.Now()
	var rec Record
	// Taking the lease is the one write a Jarvis makes without holding it.
	err := l.deps.Tx.InTx(core.Unfenced(ctx), func(ctx context.Context) error {
		prev, err := l.deps.Store.Get(ctx, l.cfg.WorkspaceID)
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			return err
		}
		got, ok, err := l.deps.Store.Acquire(ctx, l.cfg.WorkspaceID, l.deps.Holder, now, now.Add(l.cfg.TTL))
		if err != nil {
			return err
		}
		if !ok {
			return &HeldError{Lease: got}
		}
		rec = got
		if got.Epoch == prev.Epoch || l.deps.Room == "" {
			return nil
		}
		return l.deps.Outbox.Enqueue(ctx, core.Notice{
			Key:    fmt.Sprintf("lease:%s:%d", l.cfg.WorkspaceID, got.Epoch),
			RoomID: l.deps.Room,
			Kind:   core.NoticeMessage,
			Body:   takeoverText(prev, got),
		})
	})
	if err != nil {
		if errors.Is(err, core.ErrLeaseHeld) {
			l.mu.Lock()
			l.held = false
			l.mu.Unlock()
		}
		return 0, fmt.Errorf("acquire workspace lease %q: %w", l.cfg.WorkspaceID, err)
	}
	// The expiry is remembered by this host's clock, from before the lease
	// was written, never later than the store's own: the store may judge by
	// another clock (see Store).
	l.mu.Lock()
	l.held, l.epoch, l.expires = true, rec.Epoch, time.UnixMilli(now.Add(l.cfg.TTL).UnixMilli())
	l.mu.Unlock()
	return rec.Epoch, nil
}

func takeoverText(prev, got Record) string {
	switch {
	case prev.Epoch == 0:
		return fmt.Sprintf("🔐 Jarvis `%s` holds the workspace lease for `%s` (epoch %d).", got.Holder, got.WorkspaceID, got.Epoch)
	case prev.Holder == got.Holder:
		return fmt.Sprintf("🔐 Jarvis `%s` took the workspace lease for `%s` back after it lapsed (epoch %d, was %d).",
			got.Holder, got.WorkspaceID, got.Epoch, prev.Epoch)
	default:
		return fmt.Sprintf("🔐 Jarvis `%s` took over the workspace lease for `%s` (epoch %d). "+
			"The previous holder `%s` (epoch %d) is fenced out: its writes and messages are refused.",
			got.Holder, got.WorkspaceID, got.Epoch, prev.Holder, prev.Epoch)
	}
}

// Renew extends the lease this Jarvis holds. When the lease was lost (it
// expired, or another Jarvis took it over) it returns ErrStaleEpoch and
// Holding reports false from then on. Other errors leave the lease as it
// was; Check turns conservative as its expiry nears.
func (l *Lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	held, epoch := l.held, l.epoch
	l.mu.Unlock()
	if !held {
		return fmt.Errorf("renew workspace lease %q: not held: %w", l.cfg.WorkspaceID, core.ErrStaleEpoch)
	}
	now := l.deps.Clock.Now()
	// The store keeps milliseconds; remember the expiry it keeps, never a
	// later one.
	expires := time.UnixMilli(now.Add(l.cfg.TTL).UnixMilli())
	if err := l.deps.Store.Renew(ctx, l.cfg.WorkspaceID, l.deps.Holder, epoch, now, expires); err != nil {
		if errors.Is(err, core.ErrStaleEpoch) {
			l.drop(epoch)
		}
		return fmt.Errorf("renew workspace lease %q (epoch %d): %w", l.cfg.WorkspaceID, epoch, err)
	}
	l.mu.Lock()
	if l.held && l.epoch == epoch {
		l.expires = expires
	}
	l.mu.Unlock()
	return nil
}

// drop forgets the lease if it is still the one with epoch.
func (l *Lease) drop(epoch int64) {
	l.mu.Lock()
	if l.epoch == epoch {
		l.held = false
	}
	l.mu.Unlock()
}

// Release gives the lease up on a clean stop, so another Jarvis can take
// it over at once. It stops Check from passing before it touches the
// database. Releasing a lease not held does nothing.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	held, epoch := l.held, l.epoch
	l.held = false
	l.mu.Unlock()
	if !held {
		return nil
	}
	if err := l.deps.Store.Release(ctx, l.cfg.WorkspaceID, l.deps.Holder, epoch, l.deps.Clock.Now()); err != nil {
		return fmt.Errorf("release workspace lease %q (epoch %d): %w", l.cfg.WorkspaceID, epoch, err)
	}
	return nil
}

// Check returns nil when this Jarvis may send: it holds the lease, at
// least a third of the lease time is left before the expiry it last wrote,
// and the lease row, read once, still names it with its epoch and has not
// expired by the store's clock. Run renews every third of the lease time,
// so the margin is only eaten into when renewals fail, and a send that
// Check allows finishes well before anyone else could take the lease over.
// Otherwise it returns ErrStaleEpoch.
func (l *Lease) Check(ctx context.Context) error {
	l.mu.Lock()
	held, epoch, left := l.held, l.epoch, l.expires.Sub(l.deps.Clock.Now())
	l.mu.Unlock()
	switch {
	case !held:
		return fmt.Errorf("workspace lease %q not held: %w", l.cfg.WorkspaceID, core.ErrStaleEpoch)
	case left < l.cfg.TTL/3:
		return fmt.Errorf("workspace lease %q (epoch %d) not renewed, %s left: %w", l.cfg.WorkspaceID, epoch, left, core.ErrStaleEpoch)
	}
	return l.Fence(ctx, epoch)
}

// Holding returns the epoch of the lease this Jarvis holds, and whether it
// holds one that has not expired.
func (l *Lease) Holding() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch, l.held && l.deps.Clock.Now().Before(l.expires)
}

// Fence returns ErrStaleEpoch unless this Jarvis still holds the lease
// under epoch and it has not expired, as the database sees it. Chat-driven
// writes call it inside their transaction with the epoch they started
// under; the lease then cannot change hands before they commit.
func (l *Lease) Fence(ctx context.Context, epoch int64) error {
	err := l.deps.Store.Fence(ctx, l.cfg.WorkspaceID, l.deps.Holder, epoch, l.deps.Clock.Now())
	if err != nil {
		if errors.Is(err, core.ErrStaleEpoch) {
			l.drop(epoch)
		}
		return fmt.Errorf("fence workspace lease %q (epoch %d): %w", l.cfg.WorkspaceID, epoch, err)
	}
	return nil
}

// FenceHeld fences the epoch this Jarvis holds now: services whose writes
// take a func(ctx) error fence (such as Cards.Fence) are wired to it.
func (l *Lease) FenceHeld(ctx context.Context) error {
	l.mu.Lock()
	held, epoch := l.held, l.epoch
	l.mu.Unlock()
	if !held {
		return fmt.Errorf("fence workspace lease %q: not held: %w", l.cfg.WorkspaceID, core.ErrStaleEpoch)
	}
	return l.Fence(ctx, epoch)
}

// Current returns the lease as stored, whoever holds it.
func (l *Lease) Current(ctx context.Context) (Record, error) {
	rec, err := l.deps.Store.Get(ctx, l.cfg.WorkspaceID)
	if err != nil {
		return rec, fmt.Errorf("workspace lease %q: %w", l.cfg.WorkspaceID, err)
	}
	return rec, nil
}

// Live returns the lease as stored if it has not expired, whoever holds
// it, or ErrNotFound.
func (l *Lease) Live(ctx context.Context) (Record, error) {
	rec, err := l.deps.Store.Live(ctx, l.cfg.WorkspaceID, l.deps.Clock.Now())
	if err != nil {
		return rec, fmt.Errorf("workspace lease %q: %w", l.cfg.WorkspaceID, err)
	}
	return rec, nil
}

// Run keeps the lease until ctx ends: every TTL/3, and whenever Released
// says so, it renews the lease it holds or tries to take it. onChange hears the outcome of the first round
// and every change after it (held or not, and the epoch). When ctx ends it
// releases the lease, tells onChange, and returns the release error.
func (l *Lease) Run(ctx context.Context, onChange func(held bool, epoch int64)) error {
	first := true
	var wasHeld bool
	var wasEpoch int64
	for {
		l.round(ctx)
		epoch, held := l.Holding()
		if first || held != wasHeld || epoch != wasEpoch {
			onChange(held, epoch)
			first, wasHeld, wasEpoch = false, held, epoch
		}
		if l.deps.OnRound != nil {
			l.deps.OnRound(held)
		}
		select {
		case <-ctx.Done():
			err := l.Release(context.WithoutCancel(ctx))
			if wasHeld {
				onChange(false, wasEpoch)
			}
			return err
		case <-l.deps.After(l.cfg.TTL / 3):
		case <-l.deps.Released:
		}
	}
}

// round renews the lease when held and tries to take it otherwise. A
// renewal that fails for another reason than a stale epoch keeps the
// lease until its expiry passes.
func (l *Lease) round(ctx context.Context) {
	var err error
	if _, held := l.Holding(); held {
		err = l.Renew(ctx)
		if epoch, stillHeld := l.Holding(); !stillHeld {
			l.drop(epoch)
		}
	} else {
		_, err = l.Acquire(ctx)
	}
	if err != nil && !errors.Is(err, core.ErrLeaseHeld) && !errors.Is(err, core.ErrStaleEpoch) && l.deps.OnError != nil {
		l.deps.OnError(err)
	}
}
