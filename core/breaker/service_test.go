package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

const (
	breakerRoom      = "!ops:test"
	breakerAgent     = "ani"
	breakerReviewer  = "@alice:test"
	breakerOverruler = "@bob:test"
)

var (
	breakerStart  = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	breakerAdmins = []string{"@alice:test", "@bob:test"}
)

// breakerFixture is a breaker service on a real store, with the event
// the breaker is on (ev) and the agents OnChange heard of.
type breakerFixture struct {
	s       *store.Store
	clock   *coretest.Clock
	b       *breaker.Service
	ev      breaker.Event
	mu      sync.Mutex
	changed []string
}

func newBreakerFixture(t *testing.T, s *store.Store, cfg breaker.Config) *breakerFixture {
	t.Helper()
	f := &breakerFixture{s: s, clock: coretest.NewClock(breakerStart)}
	w := services.Wiring{Store: s, Clock: f.clock, Room: breakerRoom, Admins: breakerAdmins}
	f.b = w.Breakers(cfg, func(d *breaker.Deps) {
		d.OnChange = func(agent string) {
			f.mu.Lock()
			f.changed = append(f.changed, agent)
			f.mu.Unlock()
		}
	})
	return f
}

func (f *breakerFixture) changes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.changed)
}

var breakerHaltInput = breaker.OpenInput{
	Severity: breaker.SeveritySafety,
	Reason:   "tried to delete the commitments ledger",
	Evidence: []string{"tool call: rm -rf ledger/commitments", "reply: \"nobody will notice\""},
	By:       "aster",
}

// breakerSteps are the moves tests make, by name. Each leaves f.ev on the
// event the breaker is on afterwards.
var breakerSteps = map[string]func(ctx context.Context, f *breakerFixture) error{
	"open": func(ctx context.Context, f *breakerFixture) error {
		ev, err := f.b.Open(ctx, breakerAgent, breakerHaltInput)
		if err == nil {
			f.ev = ev
		}
		return err
	},
	"review": func(ctx context.Context, f *breakerFixture) error {
		_, err := f.b.Review(ctx, f.ev.ID, breakerReviewer)
		return err
	},
	"resume": func(ctx context.Context, f *breakerFixture) error {
		_, err := f.b.Resume(ctx, f.ev.ID, breakerReviewer)
		return err
	},
	"reset": func(ctx context.Context, f *breakerFixture) error {
		_, err := f.b.Reset(ctx, f.ev.ID, breakerOverruler)
		return err
	},
	"verify ok": func(ctx context.Context, f *breakerFixture) error {
		_, err := f.b.Verify(ctx, breakerAgent, true, "identity bounds hold again", "aster")
		return err
	},
	"verify fail": func(ctx context.Context, f *breakerFixture) error {
		st, err := f.b.Verify(ctx, breakerAgent, false, "still promising things it cannot keep", "aster")
		if err == nil {
			f.ev = *st.Event
		}
		return err
	},
	"review unknown event": func(ctx context.Context, f *breakerFixture) error {
		_, err := f.b.Review(ctx, "brk_00000000", breakerReviewer)
		return err
	},
}

// breakerWantNotice describes a notice a transition enqueues. on names the event
// whose halt notice it targets: "before" (the event the breaker was on),
// "after" (the one it is on now) or "" (no target).
type breakerWantNotice struct {
	kind     core.NoticeKind
	on       string
	thread   bool
	mentions bool
	contains []string
}

func breakerHaltNotices(contains ...string) []breakerWantNotice {
	return []breakerWantNotice{
		{kind: core.NoticeMessage, mentions: true, contains: contains},
		{kind: core.NoticeReaction, on: "after", contains: []string{breaker.ReactReview}},
		{kind: core.NoticeReaction, on: "after", contains: []string{breaker.ReactResume}},
		{kind: core.NoticeReaction, on: "after", contains: []string{breaker.ReactKeep}},
	}
}

// breakerNewNotices returns the notices enqueued after the first skip ones.
func breakerNewNotices(t *testing.T, s *store.Store, skip int) []core.OutboxEntry {
	t.Helper()
	all, err := s.Outbox().Waiting(context.Background(), 1000)
	if err != nil {
		t.Fatalf("waiting notices: %v", err)
	}
	return all[skip:]
}

func TestBreakerTransitions(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			tests := []struct {
				name        string
				setup       []string
				act         string
				wantErr     error
				wantState   breaker.State
				wantAudit   []breaker.Action
				wantNotices []breakerWantNotice
				wantEvent   func(t *testing.T, before, after breaker.Event)
			}{
				{
					name: "closed to open", act: "open", wantState: breaker.Open,
					wantAudit: []breaker.Action{breaker.ActOpen},
					wantNotices: breakerHaltNotices("🛑 **HALTED**", "**ani**", "safety",
						"tried to delete the commitments ledger", "[1] tool call: rm -rf ledger/commitments", "by aster",
						"What to do:", "!breaker resume brk_", "@alice:test @bob:test"),
				},
				{
					name: "open: review records the breakerReviewer", setup: []string{"open"}, act: "review", wantState: breaker.Open,
					wantAudit: []breaker.Action{breaker.ActReview},
					wantNotices: []breakerWantNotice{
						{kind: core.NoticeEdit, on: "after", contains: []string{"**HALTED**", "👀 reviewing by @alice:test since Mar 1 12:00 UTC"}},
						{kind: core.NoticeMessage, on: "after", thread: true, contains: []string{"@alice:test is reviewing the halt of **ani**"}},
					},
					wantEvent: func(t *testing.T, _, after breaker.Event) {
						if after.ReviewedBy != breakerReviewer {
							t.Errorf("reviewed by %q, want %q", after.ReviewedBy, breakerReviewer)
						}
					},
				},
				{
					name: "open to half-open by resume", setup: []string{"open", "review"}, act: "resume", wantState: breaker.HalfOpen,
					wantAudit: []breaker.Action{breaker.ActResume},
					wantNotices: []breakerWantNotice{
						{kind: core.NoticeEdit, on: "after", contains: []string{"**HALF-OPEN**", "half-open since Mar 1 12:00 UTC, resumed by @alice:test"}},
						{kind: core.NoticeMessage, on: "after", thread: true, contains: []string{"@alice:test resumed **ani** into a half-open trial"}},
					},
				},
				{
					name: "open to closed by overrule", setup: []string{"open"}, act: "reset", wantState: breaker.Closed,
					wantAudit: []breaker.Action{breaker.ActOverrule},
					wantNotices: []breakerWantNotice{
						{kind: core.NoticeEdit, on: "after", contains: []string{"**OVERRULED**", "overruled and closed by @bob:test"}},
						{kind: core.NoticeMessage, on: "after", thread: true, contains: []string{"@bob:test overruled the breaker of **ani**"}},
					},
					wantEvent: func(t *testing.T, _, after breaker.Event) {
						if after.Resolution != breaker.Overruled || after.ResolvedBy != breakerOverruler || after.ResolvedAt.IsZero() {
							t.Errorf("resolution %q by %q at %v, want overruled by %s", after.Resolution, after.ResolvedBy, after.ResolvedAt, breakerOverruler)
						}
					},
				},
				{
					name: "half-open to closed by verification", setup: []string{"open", "resume"}, act: "verify ok", wantState: breaker.Closed,
					wantAudit: []breaker.Action{breaker.ActVerified},
					wantNotices: []breakerWantNotice{
						{kind: core.NoticeEdit, on: "after", contains: []string{"**RESOLVED**", "verified and closed by aster", "identity bounds hold again"}},
						{kind: core.NoticeMessage, on: "after", thread: true, contains: []string{"aster verified **ani**: identity bounds hold again"}},
					},
					wantEvent: func(t *testing.T, _, after breaker.Event) {
						if after.Resolution != breaker.Verified || after.ResolvedBy != "aster" {
							t.Errorf("resolution %q by %q, want verified by aster", after.Resolution, after.ResolvedBy)
						}
					},
				},
				{
					name: "half-open to open with a new linked event when verification fails", setup: []string{"open", "resume"}, act: "verify fail",
					wantState: breaker.Open,
					wantAudit: []breaker.Action{breaker.ActVerifyFailed},
					wantNotices: append([]breakerWantNotice{
						{kind: core.NoticeEdit, on: "before", contains: []string{"**RE-OPENED**", "the verification failed: still promising things it cannot keep"}},
						{kind: core.NoticeMessage, on: "before", thread: true, contains: []string{"aster's verification of **ani** failed"}},
					}, breakerHaltNotices("**HALTED**", "still promising things it cannot keep", "**Follows:** event `brk_")...),
					wantEvent: func(t *testing.T, before, after breaker.Event) {
						if after.ID == before.ID || after.PreviousID != before.ID || after.Severity != breaker.SeveritySafety {
							t.Errorf("new event %+v, want one linked to %s with its severity", after, before.ID)
						}
					},
				},
				{
					name: "half-open to open when the supervisor halts again", setup: []string{"open", "resume"}, act: "open",
					wantState: breaker.Open,
					wantAudit: []breaker.Action{breaker.ActOpen},
					wantNotices: append([]breakerWantNotice{
						{kind: core.NoticeEdit, on: "before", contains: []string{"**RE-OPENED**", "aster halted it again during the trial"}},
						{kind: core.NoticeMessage, on: "before", thread: true, contains: []string{"aster halted **ani** again during the half-open trial"}},
					}, breakerHaltNotices("**HALTED**")...),
				},
				{
					name: "half-open to closed by overrule", setup: []string{"open", "resume"}, act: "reset", wantState: breaker.Closed,
					wantAudit: []breaker.Action{breaker.ActOverrule},
					wantNotices: []breakerWantNotice{
						{kind: core.NoticeEdit, on: "after", contains: []string{"**OVERRULED**"}},
						{kind: core.NoticeMessage, on: "after", thread: true, contains: []string{"closed without verification"}},
					},
				},
				{name: "closed: review is illegal", setup: []string{"open", "reset"}, act: "review", wantErr: core.ErrIllegalTransition, wantState: breaker.Closed},
				{name: "closed: resume is illegal", setup: []string{"open", "reset"}, act: "resume", wantErr: core.ErrIllegalTransition, wantState: breaker.Closed},
				{name: "closed: reset is illegal", setup: []string{"open", "reset"}, act: "reset", wantErr: core.ErrIllegalTransition, wantState: breaker.Closed},
				{name: "closed: verify is illegal", act: "verify ok", wantErr: core.ErrIllegalTransition, wantState: breaker.Closed},
				{name: "closed after verification: verify again is illegal", setup: []string{"open", "resume", "verify ok"}, act: "verify fail", wantErr: core.ErrIllegalTransition, wantState: breaker.Closed},
				{name: "open: open again is illegal", setup: []string{"open"}, act: "open", wantErr: core.ErrIllegalTransition, wantState: breaker.Open},
				{name: "open: verify is illegal", setup: []string{"open"}, act: "verify ok", wantErr: core.ErrIllegalTransition, wantState: breaker.Open},
				{name: "open: failed verify is illegal", setup: []string{"open"}, act: "verify fail", wantErr: core.ErrIllegalTransition, wantState: breaker.Open},
				{name: "half-open: resume again is illegal", setup: []string{"open", "resume"}, act: "resume", wantErr: core.ErrIllegalTransition, wantState: breaker.HalfOpen},
				{name: "half-open: review is illegal", setup: []string{"open", "resume"}, act: "review", wantErr: core.ErrIllegalTransition, wantState: breaker.HalfOpen},
				{name: "unknown event", setup: []string{"open"}, act: "review unknown event", wantErr: core.ErrNotFound, wantState: breaker.Open},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ctx := context.Background()
					s := testdb.OpenStore(t, engine)
					f := newBreakerFixture(t, s, testconfig.Breaker())
					for _, step := range tt.setup {
						if err := breakerSteps[step](ctx, f); err != nil {
							t.Fatalf("setup %s: %v", step, err)
						}
					}
					before := f.ev
					recBefore, err := s.Breakers().Get(ctx, breakerAgent)
					if err != nil {
						t.Fatalf("get: %v", err)
					}
					audits, notices, changes := testdb.Rows(t, s, "breaker_audit"), testdb.Rows(t, s, "outbox"), len(f.changes())

					err = breakerSteps[tt.act](ctx, f)
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("%s: error %v, want %v", tt.act, err, tt.wantErr)
					}
					st, err := f.b.Status(ctx, breakerAgent)
					if err != nil {
						t.Fatalf("status: %v", err)
					}
					if st.State != tt.wantState {
						t.Errorf("state %s, want %s", st.State, tt.wantState)
					}
					if tt.wantErr != nil {
						if n := testdb.Rows(t, s, "breaker_audit"); n != audits {
							t.Errorf("%d audit rows after a refused move, want %d", n, audits)
						}
						if n := testdb.Rows(t, s, "outbox"); n != notices {
							t.Errorf("%d notices after a refused move, want %d", n, notices)
						}
						if rec, _ := s.Breakers().Get(ctx, breakerAgent); rec != recBefore {
							t.Errorf("breaker %+v after a refused move, want %+v", rec, recBefore)
						}
						if n := len(f.changes()); n != changes {
							t.Errorf("OnChange heard %d changes after a refused move, want %d", n, changes)
						}
						return
					}

					if (st.State == breaker.Closed) != (st.Event == nil) {
						t.Errorf("status event %v with state %s", st.Event, st.State)
					}
					moved := st.State != recBefore.State || tt.act == "verify fail" || tt.act == "open"
					if got := f.changes()[changes:]; moved != (len(got) == 1) || (moved && got[0] != breakerAgent) {
						t.Errorf("OnChange heard %v, want the agent once if the state moved (%v)", got, moved)
					}

					history, err := f.b.History(ctx, f.ev.ID)
					if err != nil {
						t.Fatalf("history: %v", err)
					}
					if n := testdb.Rows(t, s, "breaker_audit") - audits; n != len(tt.wantAudit) {
						t.Fatalf("%d audit rows written, want %d", n, len(tt.wantAudit))
					}
					last := history[len(history)-1]
					if last.Action != tt.wantAudit[0] || last.From != recBefore.State || last.To != tt.wantState || last.Actor == "" || !last.At.Equal(breakerStart) {
						t.Errorf("audit row %+v, want %s from %s to %s with an actor and time", last, tt.wantAudit[0], recBefore.State, tt.wantState)
					}

					after, err := f.b.Event(ctx, f.ev.ID)
					if err != nil {
						t.Fatalf("event: %v", err)
					}
					if tt.wantEvent != nil {
						tt.wantEvent(t, before, after)
					}

					got := breakerNewNotices(t, s, notices)
					if len(got) != len(tt.wantNotices) {
						t.Fatalf("%d notices, want %d: %+v", len(got), len(tt.wantNotices), got)
					}
					for i, want := range tt.wantNotices {
						n := got[i]
						target := map[string]string{"before": before.NoticeKey(), "after": after.NoticeKey()}[want.on]
						if n.Kind != want.kind || n.Target != target || n.Thread != want.thread || n.RoomID != breakerRoom {
							t.Errorf("notice %d %q: %s on %q thread %v in %s, want %s on %q thread %v in %s",
								i, n.Key, n.Kind, n.Target, n.Thread, n.RoomID, want.kind, target, want.thread, breakerRoom)
						}
						if want.kind == core.NoticeMessage && !want.thread && n.Key != after.NoticeKey() {
							t.Errorf("halt notice key %q, want %q", n.Key, after.NoticeKey())
						}
						if want.mentions != slices.Equal(n.Mentions, breakerAdmins) {
							t.Errorf("notice %d mentions %v, want admins %v", i, n.Mentions, want.mentions)
						}
						for _, c := range want.contains {
							if !strings.Contains(n.Body, c) {
								t.Errorf("notice %d %q lacks %q:\n%s", i, n.Key, c, n.Body)
							}
						}
					}
				})
			}
		})
	}
}

func TestBreakerFenceWritesNothing(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			s := testdb.OpenStore(t, engine)
			f := newBreakerFixture(t, s, testconfig.Breaker())
			s.SetFence(func(context.Context) error { return core.ErrStaleEpoch })
			if _, err := f.b.Open(ctx, breakerAgent, breakerHaltInput); !errors.Is(err, core.ErrStaleEpoch) {
				t.Fatalf("open behind a stale lease: %v, want ErrStaleEpoch", err)
			}
			for _, table := range []string{"breaker", "breaker_event", "breaker_audit", "outbox"} {
				if n := testdb.Rows(t, s, table); n != 0 {
					t.Errorf("%d rows in %s, want 0", n, table)
				}
			}
		})
	}
}

func TestBreakerSurvivesRestart(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cfg := testdb.NewConfig(t, engine)
			first := testdb.OpenConfig(t, cfg)
			f := newBreakerFixture(t, first, testconfig.Breaker())
			ev, err := f.b.Open(ctx, breakerAgent, breakerHaltInput)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if _, err := f.b.Review(ctx, ev.ID, breakerReviewer); err != nil {
				t.Fatalf("review: %v", err)
			}
			notices := testdb.Rows(t, first, "outbox")
			first.Close()

			s := testdb.OpenConfig(t, cfg)
			g := newBreakerFixture(t, s, testconfig.Breaker())
			st, err := g.b.Status(ctx, breakerAgent)
			if err != nil {
				t.Fatalf("status after restart: %v", err)
			}
			if st.State != breaker.Open || st.Event == nil {
				t.Fatalf("after restart: %s %v, want open with its event", st.State, st.Event)
			}
			got := *st.Event
			if got.ID != ev.ID || got.Reason != breakerHaltInput.Reason || !slices.Equal(got.Evidence, breakerHaltInput.Evidence) ||
				got.Severity != breakerHaltInput.Severity || got.OpenedBy != "aster" || !got.At.Equal(breakerStart) || got.ReviewedBy != breakerReviewer {
				t.Errorf("event after restart %+v, want %+v reviewed by %s", got, ev, breakerReviewer)
			}
			if _, err := g.b.Open(ctx, breakerAgent, breakerHaltInput); !errors.Is(err, core.ErrIllegalTransition) {
				t.Errorf("open again after restart: %v, want ErrIllegalTransition", err)
			}
			if n := testdb.Rows(t, s, "outbox"); n != notices {
				t.Errorf("%d notices after restart, want the %d from before", n, notices)
			}
			history, err := g.b.History(ctx, ev.ID)
			if err != nil || len(history) != 2 || history[0].Action != breaker.ActOpen || history[1].Action != breaker.ActReview {
				t.Errorf("history after restart %+v (%v), want open then review", history, err)
			}
			byKey, err := g.b.EventByNoticeKey(ctx, ev.NoticeKey())
			if err != nil || byKey.ID != ev.ID {
				t.Errorf("event by notice key %q: %s, %v", ev.NoticeKey(), byKey.ID, err)
			}
		})
	}
}

func TestBreakerHalfOpenTimeout(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			s := testdb.OpenStore(t, engine)
			cfg := testconfig.Breaker()
			cfg.HalfOpenTimeout = 10 * time.Minute
			f := newBreakerFixture(t, s, cfg)
			ev, err := f.b.Open(ctx, breakerAgent, breakerHaltInput)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			if _, err := f.b.Resume(ctx, ev.ID, breakerReviewer); err != nil {
				t.Fatalf("resume: %v", err)
			}
			steps := []struct {
				name      string
				advance   time.Duration
				resume    bool
				wantSwept int
				wantState breaker.State
			}{
				{name: "within the timeout", advance: 9*time.Minute + 59*time.Second, wantSwept: 0, wantState: breaker.HalfOpen},
				{name: "timeout reached: open again", advance: time.Second, wantSwept: 1, wantState: breaker.Open},
				{name: "an open breaker stays open", advance: time.Hour, wantSwept: 0, wantState: breaker.Open},
				{name: "resumed again", resume: true, wantSwept: 0, wantState: breaker.HalfOpen},
				{name: "second timeout", advance: 10 * time.Minute, wantSwept: 1, wantState: breaker.Open},
			}
			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					f.clock.Advance(st.advance)
					if st.resume {
						if _, err := f.b.Resume(ctx, ev.ID, breakerReviewer); err != nil {
							t.Fatalf("resume: %v", err)
						}
					}
					notices := testdb.Rows(t, s, "outbox")
					n, err := f.b.Sweep(ctx)
					if err != nil || n != st.wantSwept {
						t.Fatalf("sweep: %d, %v; want %d", n, err, st.wantSwept)
					}
					status, err := f.b.Status(ctx, breakerAgent)
					if err != nil || status.State != st.wantState || status.EventID != ev.ID {
						t.Fatalf("status %s on %s (%v), want %s on the same event %s", status.State, status.EventID, err, st.wantState, ev.ID)
					}
					got := breakerNewNotices(t, s, notices)
					if st.wantSwept == 0 {
						if len(got) != 0 {
							t.Errorf("%d notices, want none", len(got))
						}
						return
					}
					if len(got) != 2 || got[0].Kind != core.NoticeEdit || got[1].Kind != core.NoticeMessage || !got[1].Thread {
						t.Fatalf("notices %+v, want an edit and a threaded reply", got)
					}
					if !strings.Contains(got[0].Body, "**HALTED**") || !strings.Contains(got[0].Body, "re-opened at") ||
						!strings.Contains(got[1].Body, "not verified within 10m") || !slices.Equal(got[1].Mentions, breakerAdmins) {
						t.Errorf("edit %q / reply %q (mentions %v), want a re-opened halt and a reply to the admins", got[0].Body, got[1].Body, got[1].Mentions)
					}
					history, _ := f.b.History(ctx, ev.ID)
					last := history[len(history)-1]
					if last.Action != breaker.ActTimeout || last.From != breaker.HalfOpen || last.To != breaker.Open || last.Actor != breaker.Sweeper {
						t.Errorf("audit row %+v, want a timeout from half-open to open by %s", last, breaker.Sweeper)
					}
				})
			}

			t.Run("no timeout configured: sweep does nothing", func(t *testing.T) {
				s := testdb.OpenStore(t, engine)
				f := newBreakerFixture(t, s, testconfig.Breaker())
				ev, err := f.b.Open(ctx, breakerAgent, breakerHaltInput)
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				if _, err := f.b.Resume(ctx, ev.ID, breakerReviewer); err != nil {
					t.Fatalf("resume: %v", err)
				}
				f.clock.Advance(24 * time.Hour)
				if n, err := f.b.Sweep(ctx); n != 0 || err != nil {
					t.Errorf("sweep: %d, %v; want 0", n, err)
				}
				if st, _ := f.b.Status(ctx, breakerAgent); st.State != breaker.HalfOpen {
					t.Errorf("state %s, want half-open", st.State)
				}
			})
		})
	}
}

func TestBreakerObservations(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			custom := breaker.Config{OpenOn: []breaker.Trigger{{Urgency: breaker.UrgencyLow, Severity: breaker.SeverityIdentity}}}
			tests := []struct {
				name       string
				cfg        breaker.Config
				setup      []string
				urgency    breaker.Urgency
				severity   breaker.Severity
				wantOpened bool
				wantState  breaker.State
			}{
				{name: "critical boundary opens", cfg: testconfig.Breaker(), urgency: breaker.UrgencyCritical, severity: breaker.SeverityBoundary, wantOpened: true, wantState: breaker.Open},
				{name: "critical identity opens", cfg: testconfig.Breaker(), urgency: breaker.UrgencyCritical, severity: breaker.SeverityIdentity, wantOpened: true, wantState: breaker.Open},
				{name: "high safety opens", cfg: testconfig.Breaker(), urgency: breaker.UrgencyHigh, severity: breaker.SeveritySafety, wantOpened: true, wantState: breaker.Open},
				{name: "high identity does not", cfg: testconfig.Breaker(), urgency: breaker.UrgencyHigh, severity: breaker.SeverityIdentity, wantState: breaker.Closed},
				{name: "low safety does not", cfg: testconfig.Breaker(), urgency: breaker.UrgencyLow, severity: breaker.SeveritySafety, wantState: breaker.Closed},
				{name: "already open: nothing new", cfg: testconfig.Breaker(), setup: []string{"open"}, urgency: breaker.UrgencyCritical, severity: breaker.SeveritySafety, wantState: breaker.Open},
				{name: "half-open: opens again", cfg: testconfig.Breaker(), setup: []string{"open", "resume"}, urgency: breaker.UrgencyCritical, severity: breaker.SeveritySafety, wantOpened: true, wantState: breaker.Open},
				{name: "configured low identity opens", cfg: custom, urgency: breaker.UrgencyLow, severity: breaker.SeverityIdentity, wantOpened: true, wantState: breaker.Open},
				{name: "configured: critical no longer opens", cfg: custom, urgency: breaker.UrgencyCritical, severity: breaker.SeveritySafety, wantState: breaker.Closed},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ctx := context.Background()
					s := testdb.OpenStore(t, engine)
					f := newBreakerFixture(t, s, tt.cfg)
					for _, step := range tt.setup {
						if err := breakerSteps[step](ctx, f); err != nil {
							t.Fatalf("setup %s: %v", step, err)
						}
					}
					events := testdb.Rows(t, s, "breaker_event")
					obs := breaker.Observation{Urgency: tt.urgency, OpenInput: breaker.OpenInput{Severity: tt.severity, Reason: "drift in the ledger"}}
					ev, opened, err := f.b.Observe(ctx, breakerAgent, obs)
					if err != nil {
						t.Fatalf("observe: %v", err)
					}
					if opened != tt.wantOpened || (opened && (ev.ID == "" || ev.Reason != "drift in the ledger" || ev.OpenedBy != breaker.DefaultSupervisor)) {
						t.Errorf("opened %v with %+v, want %v", opened, ev, tt.wantOpened)
					}
					wantEvents := events
					if tt.wantOpened {
						wantEvents++
					}
					if n := testdb.Rows(t, s, "breaker_event"); n != wantEvents {
						t.Errorf("%d events, want %d", n, wantEvents)
					}
					if st, _ := f.b.Status(ctx, breakerAgent); st.State != tt.wantState {
						t.Errorf("state %s, want %s", st.State, tt.wantState)
					}
				})
			}
		})
	}
}

func TestBreakerLookups(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			s := testdb.OpenStore(t, engine)
			f := newBreakerFixture(t, s, testconfig.Breaker())
			var ids []string
			for _, agent := range []string{"zed", "ani", "ani"} {
				if agent == "ani" && len(ids) == 2 {
					if _, err := f.b.Reset(ctx, ids[1], breakerOverruler); err != nil {
						t.Fatalf("reset: %v", err)
					}
				}
				ev, err := f.b.Open(ctx, agent, breakerHaltInput)
				if err != nil {
					t.Fatalf("open %s: %v", agent, err)
				}
				ids = append(ids, ev.ID)
				f.clock.Advance(time.Minute)
			}

			t.Run("status of all, by agent", func(t *testing.T) {
				all, err := f.b.StatusAll(ctx)
				if err != nil || len(all) != 2 || all[0].Agent != "ani" || all[1].Agent != "zed" || all[0].Event.ID != ids[2] {
					t.Fatalf("status all %+v (%v), want ani on %s then zed", all, err, ids[2])
				}
			})
			t.Run("never halted agent is closed", func(t *testing.T) {
				st, err := f.b.Status(ctx, "eve")
				if err != nil || st.State != breaker.Closed || st.Event != nil {
					t.Errorf("status %+v (%v), want closed", st, err)
				}
				if state, err := f.b.ResolveState(ctx, "ani"); err != nil || state != "open" {
					t.Errorf("resolve state: %q, %v; want open", state, err)
				}
			})
			t.Run("states of many agents at once, as of each alone", func(t *testing.T) {
				agents := []string{"ani", "eve", "zed", "ANI", "no/such agent"}
				states, errs := f.b.ResolveStates(ctx, agents)
				for i, agent := range agents {
					state, err := f.b.ResolveState(ctx, agent)
					if states[i] != state || fmt.Sprint(errs[i]) != fmt.Sprint(err) {
						t.Errorf("%s at once: %q, %v; alone %q, %v", agent, states[i], errs[i], state, err)
					}
				}
				if states[0] != "open" || states[1] != "closed" || states[3] != "closed" || !errors.Is(errs[4], core.ErrInvalid) {
					t.Errorf("at once: %q, %v; want ani open, eve and ANI closed, an invalid name refused", states, errs)
				}
			})
			t.Run("events newest first", func(t *testing.T) {
				evs, err := f.b.Events(ctx, "ani", 10)
				if err != nil || len(evs) != 2 || evs[0].ID != ids[2] || evs[1].ID != ids[1] || evs[1].Resolution != breaker.Overruled {
					t.Errorf("events %+v (%v), want %s then the overruled %s", evs, err, ids[2], ids[1])
				}
				if evs, _ := f.b.Events(ctx, "ani", 1); len(evs) != 1 {
					t.Errorf("%d events with n=1, want 1", len(evs))
				}
			})
			lookups := []struct {
				name    string
				key     string
				wantID  string
				wantErr error
			}{
				{name: "halt notice", key: "breaker:" + ids[0], wantID: ids[0]},
				{name: "a reaction is not a halt notice", key: "breaker:" + ids[0] + ":react:review", wantErr: core.ErrNotFound},
				{name: "another notice", key: "lease:ws1:1", wantErr: core.ErrNotFound},
				{name: "unknown event", key: "breaker:brk_00000000", wantErr: core.ErrNotFound},
			}
			for _, tt := range lookups {
				t.Run(tt.name, func(t *testing.T) {
					ev, err := f.b.EventByNoticeKey(ctx, tt.key)
					if !errors.Is(err, tt.wantErr) || ev.ID != tt.wantID {
						t.Errorf("event %q, %v; want %q, %v", ev.ID, err, tt.wantID, tt.wantErr)
					}
				})
			}
		})
	}
}

// staleBreakers reads every breaker one transition behind, as a
// transaction on PostgreSQL may when another commits between its read and
// its write.
type staleBreakers struct{ *store.BreakerQuery }

func (q staleBreakers) Get(ctx context.Context, agent string) (breaker.Record, error) {
	rec, err := q.BreakerQuery.Get(ctx, agent)
	rec.Version--
	return rec, err
}

func TestBreakerLostRaceWritesNothing(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			s := testdb.OpenStore(t, engine)
			f := newBreakerFixture(t, s, testconfig.Breaker())
			ev, err := f.b.Open(ctx, breakerAgent, breakerHaltInput)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			w := services.Wiring{Store: s, Clock: f.clock, Room: breakerRoom}
			stale := w.Breakers(testconfig.Breaker(), func(d *breaker.Deps) { d.Store = staleBreakers{s.Breakers()} })
			audits, notices := testdb.Rows(t, s, "breaker_audit"), testdb.Rows(t, s, "outbox")
			if _, err := stale.Resume(ctx, ev.ID, breakerReviewer); !errors.Is(err, core.ErrIllegalTransition) {
				t.Fatalf("resume from a stale read: %v, want ErrIllegalTransition", err)
			}
			if st, _ := f.b.Status(ctx, breakerAgent); st.State != breaker.Open || st.Version != 1 {
				t.Errorf("breaker %s at version %d, want open at version 1", st.State, st.Version)
			}
			if testdb.Rows(t, s, "breaker_audit") != audits || testdb.Rows(t, s, "outbox") != notices {
				t.Errorf("a lost race wrote audit rows or notices")
			}
		})
	}
}

// TestBreakerStates: the breakers of several agents are read at once, an
// agent whose breaker never opened as closed.
func TestBreakerStates(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			f := newBreakerFixture(t, testdb.OpenStore(t, engine), testconfig.Breaker())
			if _, err := f.b.Open(ctx, breakerAgent, breakerHaltInput); err != nil {
				t.Fatal(err)
			}
			if _, err := f.b.Open(ctx, "eve", breakerHaltInput); err != nil {
				t.Fatal(err)
			}
			got, err := f.b.States(ctx, []string{breakerAgent, "zeus"})
			want := map[string]string{breakerAgent: string(breaker.Open), "zeus": string(breaker.Closed)}
			if err != nil || !maps.Equal(got, want) {
				t.Errorf("States = %v, %v; want %v", got, err, want)
			}
		})
	}
}
