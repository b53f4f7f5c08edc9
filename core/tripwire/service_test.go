package tripwire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// Citizens of the tripwire tests.
const (
	twAlice = "@alice:example.org"
	twBob   = "@bob:example.org"
)

// newTWFixture is the tripwire service of cfg on a fresh store of engine.
func newTWFixture(t *testing.T, engine string, cfg tripwire.Config) *services.TripwireFixture {
	t.Helper()
	return services.NewTripwireFixture(t, testdb.OpenStore(t, engine), cfg)
}

func TestTripwirePushTripAndReset(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			def := f.Arm(twAlice, services.GIBelow("GI below yellow band", 0.7, true, 3600))
			f.Set("integrity.gi", 0.82)
			if r := f.Tick(); r.Fired != 0 || r.Evaluated != 1 {
				t.Fatalf("healthy GI: report %+v, want nothing fired of 1", r)
			}

			f.Clock.Advance(5 * time.Minute)
			f.Set("integrity.gi", 0.64)
			if r := f.Tick(); r.Fired != 1 {
				t.Fatalf("GI 0.64: report %+v, want 1 fired", r)
			}
			got := f.Get(twAlice, def.ID)
			if got.Status != tripwire.Tripped || got.LastTrippedAt == nil || !got.LastTrippedAt.Equal(f.Clock.Now()) {
				t.Errorf("after trip: status %s, last_tripped_at %v; want tripped at %v", got.Status, got.LastTrippedAt, f.Clock.Now())
			}
			notices := f.Notices()
			if len(notices) != 3 {
				t.Fatalf("outbox has %d notices, want the trip notice, 💤 on it and its chart", len(notices))
			}
			n := notices[0]
			wantKey := "trip:" + def.ID + ":1"
			if n.Key != wantKey || n.ToUser != twAlice || n.RoomID != "" || len(n.Mentions) != 1 || n.Mentions[0] != twAlice {
				t.Errorf("trip notice = key %q to %q room %q mentions %v; want key %q to %s mentioning them", n.Key, n.ToUser, n.RoomID, n.Mentions, wantKey, twAlice)
			}
			for _, want := range []string{"GI below yellow band", "0.64", "integrity.gi < 0.7", "the substrate degrades below the yellow band"} {
				if !strings.Contains(n.Body, want) {
					t.Errorf("trip notice body %q does not say %q", n.Body, want)
				}
			}
			if z := notices[1]; z.Kind != core.NoticeReaction || z.Body != "💤" || z.Target != wantKey || z.ToUser != twAlice {
				t.Errorf("second notice = %+v, want 💤 on the trip notice", z.Notice)
			}
			chart := notices[2]
			wantChart := fmt.Sprintf(`{"title":"GI below yellow band","source":{"kind":"integrity.gi"},"unit":"ratio","from":%q,"to":%q,"thresholds":[0.7],"trip_at":%q}`,
				f.Clock.Now().Add(-24*time.Hour).Format(time.RFC3339), f.Clock.Now().Format(time.RFC3339), f.Clock.Now().Format(time.RFC3339))
			if chart.Kind != core.NoticeImage || chart.Target != wantKey || !chart.Thread || chart.ToUser != twAlice || chart.Body != wantChart {
				t.Errorf("chart notice = %+v, want an image in the trip notice's thread drawing %s", chart.Notice, wantChart)
			}
			events := f.History(twAlice, def.ID)
			if len(events) != 1 || events[0].Trip != 1 || events[0].ObservedValue != 0.64 || events[0].ObservedContext["seen"] != "integrity.gi" {
				t.Errorf("history = %+v, want trip 1 observing 0.64 with its context", events)
			}

			f.Clock.Advance(5 * time.Minute)
			f.Set("integrity.gi", 0.75)
			if r := f.Tick(); r.Reset != 1 {
				t.Fatalf("GI back to 0.75: report %+v, want 1 reset", r)
			}
			got = f.Get(twAlice, def.ID)
			if got.Status != tripwire.Armed || got.LastResetAt == nil || !got.LastResetAt.Equal(f.Clock.Now()) {
				t.Errorf("after reset: status %s, last_reset_at %v; want armed, reset now", got.Status, got.LastResetAt)
			}
			notices = f.Notices()
			if len(notices) != 4 {
				t.Fatalf("outbox has %d notices, want the trip, 💤 on it, its chart and its clearing", len(notices))
			}
			c := notices[3]
			if c.Kind != core.NoticeMessage || c.Target != wantKey || !c.Thread || c.ToUser != twAlice || !strings.Contains(c.Body, "Cleared at Jan 1 09:10 UTC") {
				t.Errorf("clearing notice = %+v; want a threaded reply to %s saying when it cleared", c, wantKey)
			}
			if len(c.Mentions) != 0 {
				t.Errorf("clearing notice mentions %v; a clearing pings nobody", c.Mentions)
			}
		})
	}
}

func TestTripwireJournalOnlyInterruptsNobody(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			def := f.Arm(twAlice, services.GIBelow("quiet GI watch", 0.7, false, 3600))
			f.Set("integrity.gi", 0.5)
			f.Tick()
			f.Clock.Advance(time.Minute)
			f.Set("integrity.gi", 0.9)
			f.Tick()
			if n := f.Notices(); len(n) != 0 {
				t.Errorf("journal-only tripwire queued %d notices, want none: %+v", len(n), n)
			}
			page, err := f.Service.Journal(f.Ctx, twAlice, tripwire.JournalQuery{})
			if err != nil || len(page.Entries) != 1 || page.Entries[0].TripwireID != def.ID || page.Unread != 1 {
				t.Errorf("journal = %+v, %v; want the one unread trip", page, err)
			}
			if push, err := f.Service.ConsumePush(f.Ctx, twAlice); err != nil || len(push) != 0 {
				t.Errorf("push queue = %v, %v; want empty", push, err)
			}
		})
	}
}

func TestTripwireCooldown(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			def := f.Arm(twAlice, services.GIBelow("GI dips", 0.7, false, 3600))
			for _, step := range []struct {
				name      string
				advance   time.Duration
				gi        float64
				wantFired int
				wantReset int
				wantSkip  tripwire.SkipReason
				status    tripwire.Status
			}{
				{name: "first match fires", gi: 0.6, wantFired: 1, status: tripwire.Tripped},
				{name: "still matching inside cooldown", advance: 5 * time.Minute, gi: 0.6, wantSkip: tripwire.SkipCooldown, status: tripwire.Tripped},
				{name: "clears and resets", advance: 5 * time.Minute, gi: 0.8, wantReset: 1, status: tripwire.Armed},
				{name: "matches again inside cooldown: no fire, no reset", advance: 5 * time.Minute, gi: 0.6, wantSkip: tripwire.SkipCooldown, status: tripwire.Armed},
				{name: "cooldown over: fires again", advance: time.Hour, gi: 0.6, wantFired: 1, status: tripwire.Tripped},
				{name: "still matching after cooldown: already tripped", advance: 2 * time.Hour, gi: 0.6, wantSkip: tripwire.SkipTripped, status: tripwire.Tripped},
			} {
				t.Run(step.name, func(t *testing.T) {
					f.Clock.Advance(step.advance)
					f.Set("integrity.gi", step.gi)
					r := f.Tick()
					if r.Fired != step.wantFired || r.Reset != step.wantReset {
						t.Errorf("report %+v, want %d fired %d reset", r, step.wantFired, step.wantReset)
					}
					if step.wantSkip != "" && r.Skipped[step.wantSkip] != 1 {
						t.Errorf("skipped %v, want one %s", r.Skipped, step.wantSkip)
					}
					if got := f.Get(twAlice, def.ID).Status; got != step.status {
						t.Errorf("status %s, want %s", got, step.status)
					}
				})
			}
			if n := len(f.History(twAlice, def.ID)); n != 2 {
				t.Errorf("history has %d trips, want 2 (one per cooldown window)", n)
			}
		})
	}
}

func TestTripwireSourceErrorsAreNotFires(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			def := f.Arm(twAlice, services.GIBelow("GI dips", 0.7, true, 0))
			f.Fail("integrity.gi", errors.New("snapshot unreachable"))
			r := f.Tick()
			if r.Fired != 0 || r.Skipped[tripwire.SkipSourceError] != 1 || r.SourceErrors != 1 {
				t.Errorf("report %+v, want one source-error skip and no fire", r)
			}
			got := f.Get(twAlice, def.ID)
			if got.Status != tripwire.Armed || got.LastTrippedAt != nil || !strings.Contains(got.LastError, "snapshot unreachable") {
				t.Errorf("after a source error: %s, last tripped %v, last error %q; want armed, never tripped, the error shown",
					got.Status, got.LastTrippedAt, got.LastError)
			}
			if n := f.Notices(); len(n) != 0 {
				t.Errorf("a source error queued %d notices, want none", len(n))
			}
			f.Set("integrity.gi", 0.9)
			f.Tick()
			if got := f.Get(twAlice, def.ID); got.LastError != "" {
				t.Errorf("after the source recovered, last error %q; want none", got.LastError)
			}
		})
	}
}

// TestTripwireUnavailableSourceTellsOnlyTheReason: when a source is
// unavailable (url-fetch refused an address, a fetch timed out), the owner
// reads the reason class in last_error and in the quarantine notice, and
// never the URL or resolver text behind it.
func TestTripwireUnavailableSourceTellsOnlyTheReason(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			def := f.Arm(twAlice, services.GIBelow("GI dips", 0.7, false, 0))
			const internal = "169.254.169.254"
			unavailable := &core.SourceUnavailable{Reason: "address not allowed",
				Detail: errors.New(`Get "http://metadata.example.org/latest": dial tcp ` + internal + `:80: address not allowed`)}
			for range testconfig.Tripwires().Quarantine.SourceErrors {
				f.Clock.Advance(5 * time.Minute)
				f.Fail("integrity.gi", unavailable)
				f.Tick()
				if got := f.Get(twAlice, def.ID).LastError; got != "integrity.gi: source unavailable: address not allowed" {
					t.Fatalf("last error %q, want only the source and the reason", got)
				}
			}
			got := f.Get(twAlice, def.ID)
			notices := f.Notices()
			if got.Status != tripwire.Quarantined || len(notices) != 1 {
				t.Fatalf("status %s, %d notices; want quarantined and its owner told once", got.Status, len(notices))
			}
			for what, text := range map[string]string{"last error": got.LastError, "quarantine reason": got.QuarantineReason, "notice": notices[0].Body} {
				if !strings.Contains(text, "source unavailable: address not allowed") {
					t.Errorf("the %s %q does not give the reason", what, text)
				}
				for _, leak := range []string{"http", "metadata.example.org", internal, "dial tcp"} {
					if strings.Contains(text, leak) {
						t.Errorf("the %s %q shows %q", what, text, leak)
					}
				}
			}
		})
	}
}

func TestTripwireQuarantine(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			for _, tt := range []struct {
				name string
				// step runs one pass's worth of change; i counts from 0.
				step       func(f *services.TripwireFixture, i int)
				passes     int
				wantReason string
			}{
				{
					name: "twelve source errors in a row",
					step: func(f *services.TripwireFixture, i int) {
						f.Clock.Advance(5 * time.Minute)
						f.Fail("integrity.gi", errors.New("snapshot unreachable"))
					},
					passes:     12,
					wantReason: "its sources failed 12 times in a row",
				},
				{
					name: "seven fire/reset cycles within an hour",
					step: func(f *services.TripwireFixture, i int) {
						f.Clock.Advance(4 * time.Minute)
						f.Set("integrity.gi", []float64{0.5, 0.9}[i%2])
					},
					passes:     14,
					wantReason: "it tripped and cleared 7 times within 1h",
				},
			} {
				t.Run(tt.name, func(t *testing.T) {
					f := newTWFixture(t, engine, testconfig.Tripwires())
					def := f.Arm(twAlice, services.GIBelow("GI dips", 0.7, false, 0))
					for i := range tt.passes - 1 {
						tt.step(f, i)
						if r := f.Tick(); r.Quarantined != 0 {
							t.Fatalf("pass %d quarantined early: %+v", i+1, r)
						}
					}
					tt.step(f, tt.passes-1)
					if r := f.Tick(); r.Quarantined != 1 {
						t.Fatalf("pass %d: %+v, want the tripwire quarantined", tt.passes, r)
					}
					got := f.Get(twAlice, def.ID)
					if got.Status != tripwire.Quarantined || !strings.Contains(got.QuarantineReason, tt.wantReason) {
						t.Errorf("status %s (%q), want quarantined because %q", got.Status, got.QuarantineReason, tt.wantReason)
					}
					notices := f.Notices()
					if len(notices) != 1 || notices[0].ToUser != twAlice || !strings.Contains(notices[0].Body, "quarantined") ||
						!strings.Contains(notices[0].Body, def.ID) {
						t.Fatalf("notices = %+v, want one quarantine notice to %s", notices, twAlice)
					}

					// Quarantined: not evaluated, no further notice.
					for range 3 {
						tt.step(f, 0)
						if r := f.Tick(); r.Evaluated != 0 {
							t.Errorf("a quarantined tripwire was evaluated: %+v", r)
						}
					}
					if n := f.Notices(); len(n) != 1 {
						t.Errorf("owner told %d times, want once", len(n))
					}

					// Release re-arms it with a clean slate.
					rel, err := f.Service.Release(f.Ctx, twAlice, def.ID)
					if err != nil || rel.Status != tripwire.Armed || rel.QuarantineReason != "" {
						t.Fatalf("Release() = %s %q, %v; want armed", rel.Status, rel.QuarantineReason, err)
					}
					f.Set("integrity.gi", 0.9)
					if r := f.Tick(); r.Evaluated != 1 || r.Quarantined != 0 {
						t.Errorf("after release: %+v, want evaluated again", r)
					}
					if _, err := f.Service.Release(f.Ctx, twAlice, def.ID); !errors.Is(err, core.ErrIllegalTransition) {
						t.Errorf("releasing an armed tripwire: %v, want ErrIllegalTransition", err)
					}
				})
			}
		})
	}
}

func TestTripwireChanged(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			cooldown := 0
			def := f.Arm(twAlice, tripwire.Draft{
				Label: "EVE status changes", Rationale: "EVE has been unstable", Source: core.SourceRef{Kind: "agent.status", Param: "EVE"},
				Condition: tripwire.Condition{Op: tripwire.OpChanged}, CooldownSeconds: &cooldown,
			})
			for _, step := range []struct {
				name      string
				status    string
				wantFired int
				wantReset int
			}{
				{name: "first observation only records", status: "online"},
				{name: "same value", status: "online"},
				{name: "a change fires", status: "late", wantFired: 1},
				{name: "no further change resets", status: "late", wantReset: 1},
				{name: "another change fires again", status: "offline", wantFired: 1},
			} {
				t.Run(step.name, func(t *testing.T) {
					f.Clock.Advance(5 * time.Minute)
					f.Set("agent.status[EVE]", step.status)
					if r := f.Tick(); r.Fired != step.wantFired || r.Reset != step.wantReset {
						t.Errorf("report %+v, want %d fired %d reset", r, step.wantFired, step.wantReset)
					}
				})
			}
			events := f.History(twAlice, def.ID)
			if len(events) != 2 || events[0].ObservedValue != "late" || events[1].ObservedValue != "offline" {
				t.Errorf("history = %+v, want trips on late then offline", events)
			}
		})
	}
}

func TestTripwireCompoundConditions(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			lane := &core.SourceRef{Kind: "lane.sentiment"}
			for _, tt := range []struct {
				name      string
				op        tripwire.Op
				gi        float64
				lane      string
				wantFired int
			}{
				{name: "all: both match", op: tripwire.OpAll, gi: 0.6, lane: "degraded", wantFired: 1},
				{name: "all: one matches", op: tripwire.OpAll, gi: 0.6, lane: "healthy"},
				{name: "any: one matches", op: tripwire.OpAny, gi: 0.9, lane: "degraded", wantFired: 1},
				{name: "any: none match", op: tripwire.OpAny, gi: 0.9, lane: "healthy"},
			} {
				t.Run(tt.name, func(t *testing.T) {
					f := newTWFixture(t, engine, testconfig.Tripwires())
					def := f.Arm(twAlice, tripwire.Draft{
						Label: "GI drops while sentiment is degraded", Rationale: "the sentiment lane may hide real GI drops",
						Source: core.SourceRef{Kind: "integrity.gi"},
						Condition: tripwire.Condition{Op: tt.op, Conditions: []tripwire.Condition{
							{Op: tripwire.OpLT, Threshold: 0.7},
							{Op: tripwire.OpEQ, Threshold: "degraded", Source: lane},
						}},
					})
					f.Set("integrity.gi", tt.gi)
					f.Set("lane.sentiment", tt.lane)
					r := f.Tick()
					if r.Fired != tt.wantFired || r.Sources != 2 {
						t.Errorf("report %+v, want %d fired from 2 sources", r, tt.wantFired)
					}
					if tt.wantFired == 0 {
						return
					}
					ev := f.History(twAlice, def.ID)[0]
					values, ok := ev.ObservedValue.([]any)
					if !ok || len(values) != 2 || values[0] != tt.gi || values[1] != tt.lane {
						t.Errorf("observed value %v, want [%v %s]", ev.ObservedValue, tt.gi, tt.lane)
					}
					if !strings.Contains(ev.Summary, "lane.sentiment is "+tt.lane) {
						t.Errorf("summary %q does not name both sources", ev.Summary)
					}
				})
			}
		})
	}
}

func TestTripwireSourcesReadOncePerPass(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			for i := range 5 {
				f.Arm(twAlice, services.GIBelow(fmt.Sprintf("GI watch %d", i), 0.7, false, 3600))
				f.Arm(twBob, services.GIBelow(fmt.Sprintf("GI watch %d", i), 0.5, false, 3600))
			}
			f.Set("integrity.gi", 0.6)
			r := f.Tick()
			if r.Sources != 1 || r.Evaluated != 10 || r.Fired != 5 {
				t.Errorf("report %+v, want 1 source read for 10 tripwires, 5 fired", r)
			}
			if n := f.Sources.Reads("integrity.gi"); n != 1 {
				t.Errorf("integrity.gi read %d times in one pass, want once", n)
			}
		})
	}
}

func TestTripwireReevaluateOnlyReadsItsKinds(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			f.Arm(twAlice, services.GIBelow("GI dips", 0.7, false, 3600))
			eve := f.Arm(twAlice, tripwire.Draft{
				Label: "EVE goes offline", Rationale: "EVE runs the nightly jobs", Source: core.SourceRef{Kind: "agent.status", Param: "EVE"},
				Condition: tripwire.Condition{Op: tripwire.OpEQ, Threshold: "offline"}, Action: &tripwire.Action{Journal: true, Push: true},
			})
			f.Set("integrity.gi", 0.5)
			f.Set("agent.status[EVE]", "offline")
			r, err := f.Service.Reevaluate(f.Ctx, "agent.status")
			if err != nil {
				t.Fatal(err)
			}
			if r.Evaluated != 1 || r.Fired != 1 || f.Sources.Reads("integrity.gi") != 0 {
				t.Errorf("Reevaluate(agent.status) = %+v, GI read %d times; want only the EVE tripwire", r, f.Sources.Reads("integrity.gi"))
			}
			if n := f.Notices(); len(n) != 3 || n[0].Key != "trip:"+eve.ID+":1" || n[1].Key != "trip:"+eve.ID+":1:snooze" || n[2].Key != "trip:"+eve.ID+":1:chart" {
				t.Errorf("notices %+v, want EVE's trip notice, 💤 on it and its chart", n)
			}
		})
	}
}

func TestTripwireScopesAreIsolated(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			mine := f.Arm(twAlice, services.GIBelow("alice's GI watch", 0.7, true, 3600))
			f.Set("integrity.gi", 0.5)
			f.Tick()
			for _, tt := range []struct {
				name string
				call func() error
			}{
				{"get", func() error { _, err := f.Service.Get(f.Ctx, twBob, mine.ID); return err }},
				{"disable", func() error { _, err := f.Service.Disable(f.Ctx, twBob, mine.ID); return err }},
				{"set push", func() error { _, err := f.Service.SetPush(f.Ctx, twBob, mine.ID, false); return err }},
				{"delete", func() error { return f.Service.Delete(f.Ctx, twBob, mine.ID) }},
				{"history", func() error { _, err := f.Service.History(f.Ctx, twBob, mine.ID, 0); return err }},
				{"release", func() error { _, err := f.Service.Release(f.Ctx, twBob, mine.ID); return err }},
			} {
				t.Run(tt.name, func(t *testing.T) {
					if err := tt.call(); !errors.Is(err, core.ErrNotFound) {
						t.Errorf("bob's %s of alice's tripwire: %v, want ErrNotFound", tt.name, err)
					}
				})
			}
			if list, err := f.Service.List(f.Ctx, twBob); err != nil || len(list) != 0 {
				t.Errorf("bob's list = %v, %v; want empty", list, err)
			}
			if page, err := f.Service.Journal(f.Ctx, twBob, tripwire.JournalQuery{}); err != nil || len(page.Entries) != 0 {
				t.Errorf("bob's journal = %+v, %v; want empty", page, err)
			}
			if push, err := f.Service.ConsumePush(f.Ctx, twBob); err != nil || len(push) != 0 {
				t.Errorf("bob's push queue = %v, %v; want empty", push, err)
			}
			for _, n := range f.Notices() {
				if n.ToUser != twAlice {
					t.Errorf("notice %s goes to %q, want only alice", n.Key, n.ToUser)
				}
			}
			if got := f.Get(twAlice, mine.ID); got.Status != tripwire.Tripped || !got.Action.Push {
				t.Errorf("alice's tripwire changed by bob's attempts: %+v", got)
			}
		})
	}
}

func TestTripwireSelfScopeNotifiesTheRoom(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			f.Arm(tripwire.SelfScope, services.GIBelow("operator GI watch", 0.7, true, 3600))
			f.Set("integrity.gi", 0.5)
			f.Tick()
			n := f.Notices()
			if len(n) != 2 || n[0].RoomID != "!jarvis:example.org" || n[0].ToUser != "" || n[1].RoomID != "!jarvis:example.org" {
				t.Errorf("notices %+v, want the trip and its chart in the dedicated room", n)
			}
		})
	}
}

func TestTripwireRateLimit(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			for i := range tripwire.CreationLimit {
				def := f.Arm(twAlice, services.GIBelow(fmt.Sprintf("watch %d", i), 0.7, false, 3600))
				if i < 10 {
					if err := f.Service.Delete(f.Ctx, twAlice, def.ID); err != nil {
						t.Fatal(err)
					}
				}
				f.Clock.Advance(time.Minute)
			}
			_, err := f.Service.Arm(f.Ctx, twAlice, services.GIBelow("one too many", 0.7, false, 3600))
			if !errors.Is(err, core.ErrRateLimited) {
				t.Fatalf("51st creation within the hour: %v, want ErrRateLimited (deleting does not give creations back)", err)
			}
			list, _ := f.Service.List(f.Ctx, twAlice)
			if len(list) != tripwire.CreationLimit-10 {
				t.Errorf("alice has %d tripwires, want %d: the refused one was not created", len(list), tripwire.CreationLimit-10)
			}
			if _, err := f.Service.Arm(f.Ctx, twBob, services.GIBelow("bob's first", 0.7, false, 3600)); err != nil {
				t.Errorf("bob is limited by alice's creations: %v", err)
			}
			f.Clock.Advance(11 * time.Minute) // the first creation is now over an hour old
			if _, err := f.Service.Arm(f.Ctx, twAlice, services.GIBelow("after the window", 0.7, false, 3600)); err != nil {
				t.Errorf("creation after the oldest left the window: %v", err)
			}
		})
	}
}

func TestTripwireJournalCursor(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			a := f.Arm(twAlice, services.GIBelow("GI under 0.7", 0.7, false, 0))
			b := f.Arm(twAlice, services.GIBelow("GI under 0.5", 0.5, false, 0))
			f.Set("integrity.gi", 0.6)
			f.Tick()

			page, err := f.Service.Journal(f.Ctx, twAlice, tripwire.JournalQuery{UnreadOnly: true, MarkRead: true})
			if err != nil || page.Unread != 1 || len(page.Entries) != 1 || page.Entries[0].TripwireID != a.ID || !page.Entries[0].Unread {
				t.Fatalf("first look = %+v, %v; want a's trip, unread", page, err)
			}
			page, _ = f.Service.Journal(f.Ctx, twAlice, tripwire.JournalQuery{UnreadOnly: true})
			if page.Unread != 0 || len(page.Entries) != 0 {
				t.Errorf("second look = %+v, want nothing new", page)
			}

			f.Clock.Advance(time.Minute)
			f.Set("integrity.gi", 0.4)
			f.Tick()
			page, _ = f.Service.Journal(f.Ctx, twAlice, tripwire.JournalQuery{})
			if page.Unread != 1 || len(page.Entries) != 2 || page.Entries[0].Unread || !page.Entries[1].Unread || page.Entries[1].TripwireID != b.ID {
				t.Errorf("full journal = %+v, want a's trip read and b's unread", page)
			}
		})
	}
}

func TestTripwireConsumePushIsAtMostOnce(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			def := f.Arm(twAlice, services.GIBelow("GI dips", 0.7, true, 3600))
			f.Set("integrity.gi", 0.5)
			f.Tick()
			first, err := f.Service.ConsumePush(f.Ctx, twAlice)
			if err != nil || len(first) != 1 || first[0].TripwireID != def.ID {
				t.Fatalf("first drain = %v, %v; want the trip", first, err)
			}
			if again, err := f.Service.ConsumePush(f.Ctx, twAlice); err != nil || len(again) != 0 {
				t.Errorf("second drain = %v, %v; want empty", again, err)
			}
		})
	}
}

func TestTripwireFiringNeverChangesDefinitions(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			firing := f.Arm(twAlice, services.GIBelow("GI dips", 0.7, true, 3600))
			other := f.Arm(twAlice, services.GIBelow("GI collapses", 0.2, false, 3600))
			f.Clock.Advance(time.Hour)
			f.Set("integrity.gi", 0.5)
			f.Tick()
			after := f.Get(twAlice, firing.ID)
			after.Status, after.LastTrippedAt = firing.Status, firing.LastTrippedAt
			if fmt.Sprint(after) != fmt.Sprint(firing) {
				t.Errorf("firing changed its definition:\n got %+v\nwant %+v", after, firing)
			}
			if got := f.Get(twAlice, other.ID); fmt.Sprint(got) != fmt.Sprint(other) {
				t.Errorf("firing changed another tripwire:\n got %+v\nwant %+v", got, other)
			}
		})
	}
}

func TestTripwireUpdates(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			def := f.Arm(twAlice, services.GIBelow("GI dips", 0.7, false, 3600))
			f.Set("integrity.gi", 0.5)
			f.Tick()

			got, err := f.Service.SetPush(f.Ctx, twAlice, def.ID, true)
			if err != nil || !got.Action.Push || !got.Action.Journal {
				t.Errorf("SetPush(on) = %+v, %v", got.Action, err)
			}
			got, err = f.Service.SetCooldown(f.Ctx, twAlice, def.ID, 6*time.Hour)
			if err != nil || got.CooldownSeconds != 6*3600 {
				t.Errorf("SetCooldown(6h) = %d, %v", got.CooldownSeconds, err)
			}
			if _, err := f.Service.SetCooldown(f.Ctx, twAlice, def.ID, -time.Second); !isField(err, "cooldown_seconds") {
				t.Errorf("negative cooldown: %v, want an error naming cooldown_seconds", err)
			}
			got, err = f.Service.Disable(f.Ctx, twAlice, def.ID)
			if err != nil || got.Status != tripwire.Disabled {
				t.Errorf("Disable() = %s, %v", got.Status, err)
			}
			if r := f.Tick(); r.Evaluated != 0 {
				t.Errorf("a disabled tripwire was evaluated: %+v", r)
			}
			got, err = f.Service.Enable(f.Ctx, twAlice, def.ID)
			if err != nil || got.Status != tripwire.Armed {
				t.Errorf("Enable() = %s, %v", got.Status, err)
			}
			f.Clock.Advance(7 * time.Hour)
			if r := f.Tick(); r.Fired != 1 {
				t.Errorf("re-enabled tripwire did not fire: %+v", r)
			}

			if err := f.Service.Delete(f.Ctx, twAlice, def.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Service.Get(f.Ctx, twAlice, def.ID); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("Get() after delete: %v, want ErrNotFound", err)
			}
			if r := f.Tick(); r.Evaluated != 0 {
				t.Errorf("a deleted tripwire was evaluated: %+v", r)
			}
			if events := f.History(twAlice, def.ID); len(events) != 2 {
				t.Errorf("history after delete has %d trips, want both kept", len(events))
			}
			if err := f.Service.Delete(f.Ctx, twAlice, def.ID); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("deleting twice: %v, want ErrNotFound", err)
			}
		})
	}
}

func TestTripwireTemplates(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			if list, _ := f.Service.List(f.Ctx, twAlice); len(list) != 0 {
				t.Fatalf("a new citizen has %d tripwires, want none: templates are never armed by themselves", len(list))
			}
			templates := f.Service.Templates()
			if len(templates) != 6 {
				t.Fatalf("%d templates, want 6", len(templates))
			}
			for _, tt := range []struct {
				name, template, param string
				wantSource            core.SourceRef
				wantField             string
			}{
				{name: "GI below yellow band", template: "gi-yellow", wantSource: core.SourceRef{Kind: "integrity.gi"}},
				{name: "DAEDALUS self-ping", template: "daedalus-self-ping", wantSource: core.SourceRef{Kind: "micro-agent.value", Param: "DAEDALUS-µ5"}},
				{name: "agent offline for EVE", template: "agent-offline", param: "EVE", wantSource: core.SourceRef{Kind: "agent.status", Param: "EVE"}},
				{name: "agent offline needs an agent", template: "agent-offline", wantField: "param"},
				{name: "breaker opens", template: "breaker-open", param: "EVE", wantSource: core.SourceRef{Kind: "breaker.state", Param: "EVE"}},
				{name: "card waits for your decision", template: "card-decision", wantSource: core.SourceRef{Kind: "cards.needs_decision", Param: twAlice}},
			} {
				t.Run(tt.name, func(t *testing.T) {
					def, err := f.Service.ArmTemplate(f.Ctx, twAlice, tt.template, tt.param)
					if tt.wantField != "" {
						if !isField(err, tt.wantField) {
							t.Errorf("ArmTemplate() = %v, want an error naming %s", err, tt.wantField)
						}
						return
					}
					if err != nil || def.Source != tt.wantSource || def.Status != tripwire.Armed || def.Rationale == "" {
						t.Errorf("ArmTemplate() = %+v, %v; want armed on %v with a rationale", def, err, tt.wantSource)
					}
				})
			}
			if _, err := f.Service.ArmTemplate(f.Ctx, twAlice, "no-such-template", ""); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("unknown template: %v, want ErrNotFound", err)
			}
		})
	}
}

func TestTripwireTokens(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			plain, tok, err := f.Service.CreateToken(f.Ctx, twAlice, "dashboard")
			if err != nil || !strings.HasPrefix(plain, "jtw_") || tok.Citizen != twAlice {
				t.Fatalf("CreateToken() = %q, %+v, %v", plain, tok, err)
			}
			var stored int
			if err := f.Store.DB.QueryRow(f.Ctx, "SELECT COUNT(*) FROM tripwire_token WHERE hash = $1", plain).Scan(&stored); err != nil || stored != 0 {
				t.Errorf("the plaintext token is stored (%d rows, %v)", stored, err)
			}
			if who, err := f.Service.CitizenForToken(f.Ctx, plain); err != nil || who != twAlice {
				t.Errorf("CitizenForToken() = %q, %v; want alice", who, err)
			}
			for _, bad := range []string{"", "jtw_wrong", plain + "x", "Bearer " + plain} {
				if _, err := f.Service.CitizenForToken(f.Ctx, bad); !errors.Is(err, core.ErrUnauthorized) {
					t.Errorf("CitizenForToken(%q) = %v, want ErrUnauthorized", bad, err)
				}
			}
			if err := f.Service.RevokeToken(f.Ctx, twBob, tok.ID); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("bob revoking alice's token: %v, want ErrNotFound", err)
			}
			if list, err := f.Service.ListTokens(f.Ctx, twAlice); err != nil || len(list) != 1 || list[0].ID != tok.ID || list[0].Label != "dashboard" {
				t.Errorf("ListTokens() = %+v, %v", list, err)
			}
			if err := f.Service.RevokeToken(f.Ctx, twAlice, tok.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Service.CitizenForToken(f.Ctx, plain); !errors.Is(err, core.ErrUnauthorized) {
				t.Errorf("a revoked token: %v, want ErrUnauthorized", err)
			}
		})
	}
}

// TestFeedTokens: a calendar feed token reads whose feed it is and is
// refused where a personal token acts, a personal token is refused as a
// feed token, and revoking one kind leaves the other working.
func TestFeedTokens(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			personal, _, err := f.Service.CreateToken(f.Ctx, twAlice, "dashboard")
			if err != nil {
				t.Fatal(err)
			}
			feed, tok, err := f.Service.CreateFeedToken(f.Ctx, twAlice)
			if err != nil || !strings.HasPrefix(feed, "jcal_") || !tok.Feed() || tok.Label != tripwire.FeedTokenLabel {
				t.Fatalf("CreateFeedToken() = %q, %+v, %v", feed, tok, err)
			}
			if who, err := f.Service.CitizenForFeedToken(f.Ctx, feed); err != nil || who != twAlice {
				t.Errorf("CitizenForFeedToken(the feed token) = %q, %v; want alice", who, err)
			}
			if _, err := f.Service.CitizenForToken(f.Ctx, feed); !errors.Is(err, core.ErrUnauthorized) {
				t.Errorf("CitizenForToken(the feed token) = %v, want ErrUnauthorized", err)
			}
			if _, err := f.Service.CitizenForFeedToken(f.Ctx, personal); !errors.Is(err, core.ErrUnauthorized) {
				t.Errorf("CitizenForFeedToken(the personal token) = %v, want ErrUnauthorized", err)
			}
			if err := f.Service.RevokeToken(f.Ctx, twAlice, tok.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Service.CitizenForFeedToken(f.Ctx, feed); !errors.Is(err, core.ErrUnauthorized) {
				t.Errorf("a revoked feed token: %v, want ErrUnauthorized", err)
			}
			if who, err := f.Service.CitizenForToken(f.Ctx, personal); err != nil || who != twAlice {
				t.Errorf("the personal token after the feed token's revocation: %q, %v", who, err)
			}
		})
	}
}

func TestTripwireViewSurvivesRestart(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			def := f.Arm(twAlice, tripwire.Draft{
				Label: "vault moves", Rationale: "watch the vault", Source: core.SourceRef{Kind: "vault.balance"},
				Condition: tripwire.Condition{Op: tripwire.OpChanged},
			})
			f.Set("vault.balance", 40.0)
			f.Tick()
			// A new service (a restart) loads the view from the store, including the
			// last observation: the same value does not fire, a change does.
			w := services.Wiring{Store: f.Store, Clock: f.Clock, Room: services.TripwireRoom}
			restarted := w.Tripwires(testconfig.Tripwires(), f.Service.Sources())
			if r, err := restarted.Tick(f.Ctx); err != nil || r.Evaluated != 1 || r.Fired != 0 {
				t.Errorf("after restart, same value: %+v, %v; want evaluated, not fired", r, err)
			}
			f.Set("vault.balance", 46.0)
			if r, err := restarted.Tick(f.Ctx); err != nil || r.Fired != 1 {
				t.Errorf("after restart, changed value: %+v, %v; want fired", r, err)
			}
			if events := f.History(twAlice, def.ID); len(events) != 1 || events[0].ObservedValue != 46.0 {
				t.Errorf("history = %+v", events)
			}
		})
	}
}

// TestTripwireSnoozeJournalsInsteadOfPushing: alice snoozes her
// tripwire's pushes for an hour; a trip within it is journaled and in her
// history but neither pushed nor queued for push, and does not reply in a
// thread when it clears; the first trip after the hour is pushed again.
// Bob cannot snooze her tripwire.
func TestTripwireSnoozeJournalsInsteadOfPushing(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			f := newTWFixture(t, engine, testconfig.Tripwires())
			draft := services.GIBelow("GI below yellow band", 0.7, true, 0)
			draft.Action = &tripwire.Action{Push: true}
			def := f.Arm(twAlice, draft)
			if err := f.Service.Snooze(f.Ctx, twBob, def.ID, f.Clock.Now().Add(time.Hour)); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("bob snoozing alice's tripwire: %v, want ErrNotFound", err)
			}
			if err := f.Service.Snooze(f.Ctx, twAlice, def.ID, f.Clock.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			f.Set("integrity.gi", 0.5)
			if r := f.Tick(); r.Fired != 1 {
				t.Fatalf("report %+v, want 1 fired", r)
			}
			f.Clock.Advance(time.Minute)
			f.Set("integrity.gi", 0.9)
			f.Tick()
			if n := f.Notices(); len(n) != 0 {
				t.Errorf("a snoozed tripwire queued %d notices, want none: %+v", len(n), n)
			}
			page, err := f.Service.Journal(f.Ctx, twAlice, tripwire.JournalQuery{})
			if err != nil || len(page.Entries) != 1 || page.Entries[0].Trip != 1 {
				t.Errorf("journal = %+v, %v; want the snoozed trip", page, err)
			}
			if push, err := f.Service.ConsumePush(f.Ctx, twAlice); err != nil || len(push) != 0 {
				t.Errorf("push queue = %v, %v; want empty", push, err)
			}
			f.Clock.Advance(time.Hour)
			f.Set("integrity.gi", 0.5)
			f.Tick()
			if n := f.Notices(); len(n) != 3 || n[0].Key != "trip:"+def.ID+":2" {
				t.Errorf("after the snooze: notices %+v, want trip 2 pushed with 💤 and its chart", n)
			}
		})
	}
}

func isField(err error, field string) bool {
	var fe *core.FieldError
	return errors.As(err, &fe) && fe.Field == field
}

// TestTripwireWrittenDuringAPassIsEvaluatedAgain: a pass evaluates the
// tripwires before its transaction and, inside it, again the ones written
// meanwhile. Another Jarvis trips the tripwire between the two; this pass
// finds it tripped and cooling down, and trips it no second time.
func TestTripwireWrittenDuringAPassIsEvaluatedAgain(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			st := testdb.OpenStore(t, engine)
			clock := coretest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
			sources := coretest.NewSources()
			w := services.Wiring{Store: st, Clock: clock, Room: services.TripwireRoom}
			tx := &coretest.BeforeTx{Transactor: st}
			this := w.Tripwires(testconfig.Tripwires(), sources.Registry(), func(d *tripwire.Deps) { d.Tx = tx })
			other := w.Tripwires(testconfig.Tripwires(), sources.Registry())
			ctx := context.Background()
			def, err := this.Arm(ctx, twAlice, services.GIBelow("GI dips", 0.7, true, 3600))
			if err != nil {
				t.Fatal(err)
			}
			sources.Set("integrity.gi", 0.82)
			if _, err := this.Tick(ctx); err != nil {
				t.Fatal(err)
			}

			sources.Set("integrity.gi", 0.5)
			tx.Hook = func() {
				if r, err := other.Tick(ctx); err != nil || r.Fired != 1 {
					t.Errorf("the other Jarvis's pass: %+v, %v; want it to trip the tripwire", r, err)
				}
			}
			r, err := this.Tick(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.Fired != 0 || r.Skipped[tripwire.SkipCooldown] != 1 {
				t.Errorf("this pass: %+v; want the tripwire found cooling down, not tripped again", r)
			}
			if events, err := this.History(ctx, twAlice, def.ID, 0); err != nil || len(events) != 1 {
				t.Errorf("history: %d trips (%v), want one", len(events), err)
			}
		})
	}
}

// TestTripwirePassStepsAsideForChat: while a person waits for Jarvis's
// answer, a pass reads no source and writes nothing until the answer is
// out; a person who keeps waiting holds it back no longer than its pause.
func TestTripwirePassStepsAsideForChat(t *testing.T) {
	st := testdb.OpenStore(t, testdb.Engines()[0])
	clock := coretest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	sources := coretest.NewSources()
	var chat core.ChatFirst
	w := services.Wiring{Store: st, Clock: clock, Room: services.TripwireRoom}
	svc := w.Tripwires(testconfig.Tripwires(), sources.Registry(), func(d *tripwire.Deps) { d.Chat, d.ChatPause = &chat, time.Hour })
	ctx := context.Background()
	if _, err := svc.Arm(ctx, twAlice, services.GIBelow("GI dips", 0.7, true, 3600)); err != nil {
		t.Fatal(err)
	}
	sources.Set("integrity.gi", 0.5)

	answered := chat.Begin()
	done := make(chan tripwire.TickReport, 1)
	go func() {
		r, err := svc.Tick(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	select {
	case r := <-done:
		t.Fatalf("the pass went ahead while a person waited: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	answered()
	if r := <-done; r.Fired != 1 {
		t.Errorf("after the answer: %+v, want the tripwire fired", r)
	}

	impatient := w.Tripwires(testconfig.Tripwires(), sources.Registry(), func(d *tripwire.Deps) { d.Chat, d.ChatPause = &chat, 20*time.Millisecond })
	defer chat.Begin()()
	if _, err := impatient.Tick(ctx); err != nil {
		t.Fatalf("a pass while a person keeps waiting: %v", err)
	}
}
