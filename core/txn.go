package core

import (
	"context"
	"sync"
)

type unfencedKey struct{}

// Unfenced marks ctx for a write that goes through without holding the
// workspace lease: the lease's own acquisition, the one notice a standby
// leaves saying that it stays mute, and the record of a Jarvis process's
// own start and clean stop, which a standby has too. A Transactor that fences its
// write transactions with the lease skips the fence for them.
func Unfenced(ctx context.Context) context.Context {
	return context.WithValue(ctx, unfencedKey{}, true)
}

// IsUnfenced reports whether ctx was marked by Unfenced.
func IsUnfenced(ctx context.Context) bool {
	unfenced, _ := ctx.Value(unfencedKey{}).(bool)
	return unfenced
}

type intakeKey struct{}

// Intake marks ctx for an agent's report stored by whichever Jarvis
// receives it (a heartbeat, a journal entry, an attestation, a ping, a
// card set, an approval request, a sign-off): on an engine that several
// Jarvis processes share, a Transactor lets its writes through without
// the lease, and holds back what they would send (the notices they
// enqueue) for the lease holder to send. Where only the holder serves the
// API (one host), the mark changes nothing.
func Intake(ctx context.Context) context.Context {
	return context.WithValue(ctx, intakeKey{}, true)
}

// IsIntake reports whether ctx was marked by Intake.
func IsIntake(ctx context.Context) bool {
	intake, _ := ctx.Value(intakeKey{}).(bool)
	return intake
}

type lockedReadsKey struct{}

// LockedReads marks ctx for a transaction whose every write depends only
// on what it locks as it reads it (the store's reads that lock, such as
// an agent's reporting state or its journal's usage, and the rows its
// upserts lock) and on the database's constraints (a unique key). On an
// engine that runs several transactions at once, a Transactor may run it
// at a weaker isolation than the one that makes every check exact, where
// nothing but those locks orders it against others: fewer transactions
// refused for what they only might have seen. A transaction so marked
// that finds it must read and then write beyond what it locked returns
// ErrBeyondLockedReads, and the Transactor runs it again, whole, at full
// isolation and with ReadsLocked false.
func LockedReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, lockedReadsKey{}, true)
}

// FullyIsolated clears LockedReads's mark, for the run of a transaction
// at full isolation (or on an engine with one writer at a time).
func FullyIsolated(ctx context.Context) context.Context {
	return context.WithValue(ctx, lockedReadsKey{}, false)
}

// ReadsLocked reports whether the transaction ctx is in runs on its
// locked reads alone: marked by LockedReads and not by FullyIsolated
// since.
func ReadsLocked(ctx context.Context) bool {
	locked, _ := ctx.Value(lockedReadsKey{}).(bool)
	return locked
}

type commitHooksKey struct{}

// commitHooks are the functions waiting for one transaction to commit.
type commitHooks struct {
	mu  sync.Mutex
	fns []func()
}

// WithCommitHooks returns a context that collects what AfterCommit is
// given, and run, which calls it in order. A Transactor gives fn this
// context and calls run once the transaction has committed, and never
// when it rolled back.
func WithCommitHooks(ctx context.Context) (hooked context.Context, run func()) {
	hooks := &commitHooks{}
	return context.WithValue(ctx, commitHooksKey{}, hooks), func() {
		hooks.mu.Lock()
		fns := hooks.fns
		hooks.fns = nil
		hooks.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
	}
}

// AfterCommit runs fn once the transaction ctx belongs to has committed,
// and not at all if it rolls back: for effects outside the database that
// must follow what the transaction records (a restart after its
// confirmation is stored). Outside a transaction fn runs at once.
func AfterCommit(ctx context.Context, fn func()) {
	hooks, ok := ctx.Value(commitHooksKey{}).(*commitHooks)
	if !ok {
		fn()
		return
	}
	hooks.mu.Lock()
	hooks.fns = append(hooks.fns, fn)
	hooks.mu.Unlock()
}
