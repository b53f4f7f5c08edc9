// Package retention keeps what Jarvis stores from growing for ever: a pass
// deletes, in small batches, the rows whose purpose has run out (sent
// notices, handled-event marks, answered confirmations, expired link
// codes, old agent journal entries and boots and spend, old heartbeats,
// decided approval requests, long-deleted tripwires, resolved incidents,
// reminders that will not come again and tasks done, the router's old
// marks of consumed events), and ages the
// sources' history: readings past history.FullResolution become buckets,
// buckets past the history's retention go.
package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
)

// Batch is the most rows one delete removes. Each batch is its own short
// write, so a large backlog never holds the database in one long
// transaction.
const Batch = 500

// Config says how long each kind of row is kept.
type Config struct {
	// Outbox is how long a sent notice is kept after it was sent.
	Outbox time.Duration
	// Events is how long the mark of a handled Matrix event is kept.
	Events time.Duration
	// Pending is how long a confirmation is kept after it was answered or
	// expired.
	Pending time.Duration
	// Journal is how long an agent's journal entry is kept after it came;
	// its boots and daily spend are kept as long.
	Journal time.Duration
	// Approvals is how long an approval request is kept after it was
	// decided (or expired).
	Approvals time.Duration
	// Attestations is how long an attestation subject, its verdicts and
	// their signatures are kept after its outcome became final; an
	// undecided one stays.
	Attestations time.Duration
	// Deleted is how long a deleted tripwire's definition is kept.
	Deleted time.Duration
	// Heartbeats is how long an agent's heartbeat is kept after it came;
	// each agent's latest stays whatever its age.
	Heartbeats time.Duration
	// Incidents is how long an incident is kept after it was resolved;
	// an open one stays.
	Incidents time.Duration
	// Reminders is how long a reminder that will not come again (done,
	// cancelled, or delivered once) is kept after it was last due, and a
	// task after it was done.
	Reminders time.Duration
	// ConsumedEvents is how long the wake router's mark of a source event
	// it acted on is kept; a mark whose event a source still reports
	// stays.
	ConsumedEvents time.Duration
}

// Minimums of the windows. A handled-event mark guards exactly-once
// handling against a replayed sync, so it is kept at least a day; the
// others at least an hour, so that nothing Jarvis is still working with
// goes.
const (
	MinEvents = 24 * time.Hour
	MinWindow = time.Hour
)

// Validate checks that every window is long enough.
func (c Config) Validate() error {
	for _, w := range []struct {
		key string
		d   time.Duration
		min time.Duration
	}{
		{"retention.outbox", c.Outbox, MinWindow},
		{"retention.events", c.Events, MinEvents},
		{"retention.pending", c.Pending, MinWindow},
		{"retention.journal", c.Journal, MinWindow},
		{"retention.approvals", c.Approvals, MinWindow},
		{"retention.attestations", c.Attestations, MinWindow},
		{"retention.deleted", c.Deleted, MinWindow},
		{"retention.heartbeats", c.Heartbeats, MinWindow},
		{"retention.incidents", c.Incidents, MinWindow},
		{"retention.reminders", c.Reminders, MinWindow},
		{"retention.consumed_events", c.ConsumedEvents, MinWindow},
	} {
		if w.d < w.min {
			return core.Invalid(w.key, "must be at least %s, got %s", core.ShortDuration(w.min), w.d)
		}
	}
	return nil
}

// Store deletes rows past their window, at most limit per call, and says
// how many went.
type Store interface {
	// PruneSentNotices deletes notices sent, or given up on, before
	// before, except those a
	// notice still waiting, or sent since before, relates to (an edit, a
	// reaction, a thread reply needs the event of its target).
	PruneSentNotices(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneHandledEvents deletes the marks of events handled before
	// before and more than window before the newest mark.
	PruneHandledEvents(ctx context.Context, before time.Time, window time.Duration, limit int) (int, error)
	// PrunePending deletes confirmations answered, or expired unanswered,
	// before before.
	PrunePending(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneLinkCodes deletes link codes that expired before before, and
	// the wrong codes sent from accounts before before minus
	// core.LinkCodeTTL, which no longer count towards a lock.
	PruneLinkCodes(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneAgentJournal deletes journal entries received before before,
	// except those of each agent's current cycle.
	PruneAgentJournal(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneAgentMeter deletes agents' boots first seen before before,
	// except each agent's latest, and their spend of the days before
	// before's.
	PruneAgentMeter(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneApprovals deletes approval requests decided before before.
	PruneApprovals(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneAttestations deletes attestation subjects whose outcome became
	// final before before, with their verdicts and signatures.
	PruneAttestations(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneDeletedTripwires deletes the definitions of tripwires deleted
	// before before; their trips stay.
	PruneDeletedTripwires(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneHeartbeats deletes heartbeats received before before, except
	// each agent's latest.
	PruneHeartbeats(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneIncidents deletes incidents resolved before before; open ones
	// stay, claimed or not.
	PruneIncidents(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneReminders deletes reminders done, cancelled or delivered for
	// the last time that were last due before before, and tasks done
	// before before.
	PruneReminders(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneConsumedEvents deletes the router's marks of source events
	// consumed before before, except those of events a source can still
	// report (the CI failures in an agent's current journal cycle), which
	// would otherwise be surfaced again.
	PruneConsumedEvents(ctx context.Context, before time.Time, limit int) (int, error)
	// DownsampleHistory turns up to limit source readings taken before
	// before into buckets, and says how many readings went.
	DownsampleHistory(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneHistory deletes source readings and buckets from before before.
	PruneHistory(ctx context.Context, before time.Time, limit int) (int, error)
}

// Report says what one pass removed: rows of each kind, and the error
// that stopped it, if one did.
type Report struct {
	At        time.Time
	Notices   int
	Events    int
	Pending   int
	LinkCodes int
	Journal   int
	Meter     int
	Approvals int
	// Attestations counts attestation subjects.
	Attestations int
	Tripwires    int
	Heartbeats   int
	Incidents    int
	// Reminders counts reminders and tasks.
	Reminders int
	Consumed  int
	// Downsampled readings became buckets; History readings and buckets
	// went.
	Downsampled int
	History     int
	Err         error
}

// Service runs retention passes.
type Service struct {
	cfg  Config
	deps Deps
}

// Deps are what the service works with.
type Deps struct {
	Store Store
	Clock core.Clock
	// History says how long the sources' history is kept.
	History history.Config
}

// New builds the service.
func New(cfg Config, deps Deps) *Service {
	return &Service{cfg: cfg, deps: deps}
}

// Pass deletes everything past its window, batch by batch, and reports
// how many rows of each kind went. It stops at the first error or when
// ctx ends, reporting what it removed until then.
func (s *Service) Pass(ctx context.Context) Report {
	now := s.deps.Clock.Now()
	r := Report{At: now}
	kinds := []struct {
		name  string
		count *int
		prune func(limit int) (int, error)
	}{
		{"sent notices", &r.Notices, func(limit int) (int, error) {
			return s.deps.Store.PruneSentNotices(ctx, now.Add(-s.cfg.Outbox), limit)
		}},
		{"handled events", &r.Events, func(limit int) (int, error) {
			return s.deps.Store.PruneHandledEvents(ctx, now.Add(-s.cfg.Events), s.cfg.Events, limit)
		}},
		{"confirmations", &r.Pending, func(limit int) (int, error) {
			return s.deps.Store.PrunePending(ctx, now.Add(-s.cfg.Pending), limit)
		}},
		{"link codes", &r.LinkCodes, func(limit int) (int, error) {
			return s.deps.Store.PruneLinkCodes(ctx, now, limit)
		}},
		{"agent journal", &r.Journal, func(limit int) (int, error) {
			return s.deps.Store.PruneAgentJournal(ctx, now.Add(-s.cfg.Journal), limit)
		}},
		{"agent boots and spend", &r.Meter, func(limit int) (int, error) {
			return s.deps.Store.PruneAgentMeter(ctx, now.Add(-s.cfg.Journal), limit)
		}},
		{"approval requests", &r.Approvals, func(limit int) (int, error) {
			return s.deps.Store.PruneApprovals(ctx, now.Add(-s.cfg.Approvals), limit)
		}},
		{"attestation subjects", &r.Attestations, func(limit int) (int, error) {
			return s.deps.Store.PruneAttestations(ctx, now.Add(-s.cfg.Attestations), limit)
		}},
		{"deleted tripwires", &r.Tripwires, func(limit int) (int, error) {
			return s.deps.Store.PruneDeletedTripwires(ctx, now.Add(-s.cfg.Deleted), limit)
		}},
		{"heartbeats", &r.Heartbeats, func(limit int) (int, error) {
			return s.deps.Store.PruneHeartbeats(ctx, now.Add(-s.cfg.Heartbeats), limit)
		}},
		{"resolved incidents", &r.Incidents, func(limit int) (int, error) {
			return s.deps.Store.PruneIncidents(ctx, now.Add(-s.cfg.Incidents), limit)
		}},
		{"reminders and tasks", &r.Reminders, func(limit int) (int, error) {
			return s.deps.Store.PruneReminders(ctx, now.Add(-s.cfg.Reminders), limit)
		}},
		{"consumed events", &r.Consumed, func(limit int) (int, error) {
			return s.deps.Store.PruneConsumedEvents(ctx, now.Add(-s.cfg.ConsumedEvents), limit)
		}},
		{"source history buckets", &r.Downsampled, func(limit int) (int, error) {
			return s.deps.Store.DownsampleHistory(ctx, now.Add(-history.FullResolution), limit)
		}},
		{"source history", &r.History, func(limit int) (int, error) {
			return s.deps.Store.PruneHistory(ctx, now.Add(-s.deps.History.Retention), limit)
		}},
	}
	for _, k := range kinds {
		for ctx.Err() == nil {
			n, err := k.prune(Batch)
			*k.count += n
			if err != nil {
				r.Err = fmt.Errorf("prune %s: %w", k.name, err)
				return r
			}
			if n < Batch {
				break
			}
		}
	}
	return r
}

// Removed is how many rows the pass removed in all.
func (r Report) Removed() int {
	return r.Notices + r.Events + r.Pending + r.LinkCodes + r.Journal + r.Meter + r.Approvals + r.Attestations + r.Tripwires + r.Heartbeats + r.Incidents + r.Reminders +
		r.Consumed + r.Downsampled + r.History
}
