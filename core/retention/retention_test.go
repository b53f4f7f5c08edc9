package retention

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/history"
)

// fakeStore has backlog rows of each kind and deletes up to limit a call;
// fail, when set, is what pruning the journal returns.
type fakeStore struct {
	backlog map[string]int
	cutoffs map[string]time.Time
	fail    error
}

func (f *fakeStore) take(kind string, before time.Time, limit int) (int, error) {
	f.cutoffs[kind] = before
	n := min(f.backlog[kind], limit)
	f.backlog[kind] -= n
	return n, nil
}

func (f *fakeStore) PruneSentNotices(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("outbox", before, limit)
}
func (f *fakeStore) PruneHandledEvents(_ context.Context, before time.Time, _ time.Duration, limit int) (int, error) {
	return f.take("events", before, limit)
}
func (f *fakeStore) PrunePending(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("pending", before, limit)
}
func (f *fakeStore) PruneLinkCodes(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("links", before, limit)
}
func (f *fakeStore) PruneAgentJournal(_ context.Context, before time.Time, limit int) (int, error) {
	if f.fail != nil {
		return 1, f.fail
	}
	return f.take("journal", before, limit)
}
func (f *fakeStore) PruneAgentMeter(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("meter", before, limit)
}
func (f *fakeStore) PruneApprovals(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("approvals", before, limit)
}
func (f *fakeStore) PruneAttestations(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("attestations", before, limit)
}
func (f *fakeStore) PruneDeletedTripwires(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("deleted", before, limit)
}
func (f *fakeStore) PruneHeartbeats(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("heartbeats", before, limit)
}
func (f *fakeStore) PruneIncidents(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("incidents", before, limit)
}
func (f *fakeStore) PruneReminders(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("reminders", before, limit)
}
func (f *fakeStore) PruneConsumedEvents(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("consumed", before, limit)
}

func (f *fakeStore) DownsampleHistory(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("downsample", before, limit)
}
func (f *fakeStore) PruneHistory(_ context.Context, before time.Time, limit int) (int, error) {
	return f.take("history", before, limit)
}

var testHistory = history.Config{Retention: 72 * time.Hour}

var testConfig = Config{Outbox: 1 * time.Hour, Events: 2 * time.Hour, Pending: 3 * time.Hour, Journal: 4 * time.Hour, Deleted: 5 * time.Hour,
	Approvals: 6 * time.Hour, Heartbeats: 7 * time.Hour, Incidents: 8 * time.Hour, Reminders: 9 * time.Hour, ConsumedEvents: 10 * time.Hour, Attestations: 11 * time.Hour}

func TestPassEmptiesEveryBacklogWithItsOwnWindow(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeStore{cutoffs: map[string]time.Time{}, backlog: map[string]int{
		"outbox": 2*Batch + 7, "events": Batch, "pending": 1, "links": 0, "journal": Batch - 1, "deleted": 3,
		"meter": 4, "approvals": Batch + 2, "heartbeats": 5, "incidents": 6, "reminders": Batch, "consumed": 7,
		"downsample": Batch + 1, "history": 2, "attestations": 8}}
	r := New(testConfig, Deps{Store: f, Clock: coretest.NewClock(now), History: testHistory}).Pass(context.Background())
	want := Report{At: now, Notices: 2*Batch + 7, Events: Batch, Pending: 1, Journal: Batch - 1, Meter: 4, Approvals: Batch + 2,
		Tripwires: 3, Heartbeats: 5, Incidents: 6, Reminders: Batch, Consumed: 7, Attestations: 8, Downsampled: Batch + 1, History: 2}
	if r != want {
		t.Errorf("Pass() = %+v, want %+v", r, want)
	}
	for kind, left := range f.backlog {
		if left != 0 {
			t.Errorf("%s: %d rows left", kind, left)
		}
	}
	for kind, cut := range map[string]time.Time{"outbox": now.Add(-time.Hour), "events": now.Add(-2 * time.Hour),
		"pending": now.Add(-3 * time.Hour), "links": now, "journal": now.Add(-4 * time.Hour), "deleted": now.Add(-5 * time.Hour),
		"meter": now.Add(-4 * time.Hour), "approvals": now.Add(-6 * time.Hour),
		"heartbeats": now.Add(-7 * time.Hour), "incidents": now.Add(-8 * time.Hour), "reminders": now.Add(-9 * time.Hour),
		"consumed": now.Add(-10 * time.Hour), "attestations": now.Add(-11 * time.Hour),
		"downsample": now.Add(-48 * time.Hour), "history": now.Add(-72 * time.Hour)} {
		if !f.cutoffs[kind].Equal(cut) {
			t.Errorf("%s pruned before %s, want %s", kind, f.cutoffs[kind], cut)
		}
	}
}

func TestPassStopsAtAnError(t *testing.T) {
	boom := errors.New("disk I/O error")
	f := &fakeStore{cutoffs: map[string]time.Time{}, fail: boom, backlog: map[string]int{"outbox": 2, "deleted": 3}}
	r := New(testConfig, Deps{Store: f, Clock: coretest.NewClock(time.Now())}).Pass(context.Background())
	if !errors.Is(r.Err, boom) || r.Notices != 2 || r.Journal != 1 || r.Tripwires != 0 || r.Removed() != 3 {
		t.Errorf("Pass() = %+v, want it to stop at the journal's error after 3 rows", r)
	}
}
