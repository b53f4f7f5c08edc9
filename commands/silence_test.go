package commands

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
)

// silenceHarness is a processor with `!tw` and `!silence`, the fleet
// watching EVE (cadence 1h) and alice's tripwire on EVE's status.
type silenceHarness struct {
	*twHarness
	fleet  *fleet.Service
	oncall *oncall.Service
}

func newSilenceHarness(t *testing.T) *silenceHarness {
	t.Helper()
	th := newTripwireHarness(t, 0)
	sh := &silenceHarness{twHarness: th}
	sh.oncall = th.oncall
	deps := th.deps
	deps.Silences = sh.oncall
	th.tw = tripwire.NewService(testconfig.Tripwires(), deps)
	w := services.Wiring{Store: th.store, Clock: th.clock, Room: "!room:x"}
	sh.fleet = w.Fleet(t, fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE", Cadence: time.Hour}}}, func(d *fleet.Deps) { d.Incidents = sh.oncall })
	th.proc.features.tripwires.tw = th.tw
	th.heartbeat(t, sh.fleet)
	return sh
}

// reactions are the reactions waiting under the notice with key target.
func (sh *silenceHarness) reactions(t *testing.T, target string) []string {
	t.Helper()
	waiting, err := sh.store.Outbox().Waiting(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range waiting {
		if e.Kind == core.NoticeReaction && e.Target == target {
			out = append(out, e.Body)
		}
	}
	return out
}

// sent are the notices waiting whose key starts with prefix.
func (sh *silenceHarness) sent(t *testing.T, prefix string) []core.OutboxEntry {
	t.Helper()
	waiting, err := sh.store.Outbox().Waiting(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []core.OutboxEntry
	for _, e := range waiting {
		if strings.HasPrefix(e.Key, prefix) && e.Kind == core.NoticeMessage {
			out = append(out, e)
		}
	}
	return out
}

// TestSilence: an admin silences EVE for 3h: its alert and the push of
// alice's tripwire on EVE's status are held (the trip journaled), and
// when the 3h are up one notice says so and lists both, the reason
// escaped; EVE's alert, still open, is posted then, once, with 👀 and 💤,
// and escalated escalate_after later. Someone who is not an admin may not silence EVE, but may
// silence a source their own tripwire reads, which holds their trips
// alone. A silence until EVE resolves ends when it reports again, and
// the alert it held, resolved, is not posted.
func TestSilence(t *testing.T) {
	ctx := context.Background()
	t.Run("held for a time, ended by itself with its summary", func(t *testing.T) {
		sh := newSilenceHarness(t)
		wantText(t, "not an admin", onlyReply(t, sh.say(t, bob, "!silence EVE for 2h")), "Only an admin silences an agent")
		reply := onlyReply(t, sh.say(t, "@admin:x", `!silence eve for 3h --because "deploy *now*"`))
		wantText(t, "set", reply, "🔕 Silence 1:", "the alerts about it and the trips of tripwires reading it on EVE until 12:00 UTC", "!silence end 1")
		def, err := sh.tw.Arm(ctx, alice, tripwire.Draft{Label: "EVE *online*", Rationale: "r", Source: core.SourceRef{Kind: fleet.SourceAgentStatus, Param: "EVE"},
			Condition: tripwire.Condition{Op: tripwire.OpEQ, Threshold: "online"}, Action: &tripwire.Action{Push: true}})
		if err != nil {
			t.Fatal(err)
		}
		sh.tick(t, 0.8)
		sh.clock.Advance(2*time.Hour + time.Minute)
		if err := sh.fleet.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if got := sh.sent(t, "fleet:"); len(got) != 0 {
			t.Errorf("a silenced alert was posted: %+v", got)
		}
		if got := sh.pushes(t, alice, "trip:"); len(got) != 0 {
			t.Errorf("a silenced trip was pushed: %+v", got)
		}
		if page, err := sh.tw.Journal(ctx, alice, tripwire.JournalQuery{}); err != nil || len(page.Entries) != 1 || page.Entries[0].TripwireID != def.ID {
			t.Errorf("journal = %+v, %v; want the held trip", page, err)
		}
		if n, err := sh.oncall.EndSilences(ctx); err != nil || n != 0 {
			t.Fatalf("EndSilences() before its end = %d, %v", n, err)
		}
		sh.clock.Advance(time.Hour)
		if n, err := sh.oncall.EndSilences(ctx); err != nil || n != 1 {
			t.Fatalf("EndSilences() = %d, %v", n, err)
		}
		ended := sh.sent(t, "silence:")
		want := "🔔 **Silence 1 on EVE ended**: its 3h are up. It held 1 alert and 1 trip (all in the journals):\n\n" +
			"- 🔔 EVE \\*online\\*\n" +
			"- ⚠️ **EVE** has missed 2 heartbeats in a row: last heard 2h 2m ago (cycle C-1), expected every 1h.\n\n" +
			"1 alert is still open, posted below.\n\nIt was set by @admin:x because “deploy \\*now\\*”."
		if len(ended) != 1 || ended[0].Body != want {
			t.Errorf("the end: %+v, want %q", ended, want)
		}
		// EVE is still silent: its alert is posted now, as it would have
		// been, with 👀 and 💤 under it, and waits escalate_after for a
		// claim from now.
		alert := sh.sent(t, "fleet:")
		if len(alert) != 1 || alert[0].Key != "fleet:alert:EVE:1" || alert[0].Body != "⚠️ **EVE** has missed 2 heartbeats in a row: last heard 2h 2m ago (cycle C-1), expected every 1h." {
			t.Fatalf("after the end: %+v, want EVE's alert once", alert)
		}
		if got := sh.reactions(t, "fleet:alert:EVE:1"); !slices.Equal(got, []string{oncall.ClaimReaction, oncall.SnoozeReaction}) {
			t.Errorf("reactions under the alert: %v, want 👀 and 💤", got)
		}
		if n, _ := sh.oncall.EndSilences(ctx); n != 0 {
			t.Errorf("ended again: %d", n)
		}
		if n, err := sh.oncall.Escalate(ctx); err != nil || n != 0 {
			t.Errorf("Escalate() as the alert is posted = %d, %v; want it to wait for a claim", n, err)
		}
		sh.clock.Advance(15 * time.Minute)
		if n, err := sh.oncall.Escalate(ctx); err != nil || n != 1 {
			t.Errorf("Escalate() 15m after the alert was posted = %d, %v; want it raised", n, err)
		}
		if got := sh.sent(t, "fleet:"); len(got) != 1 {
			t.Errorf("the alert was posted %d times", len(got))
		}
	})
	t.Run("until resolved, ended when EVE reports again", func(t *testing.T) {
		sh := newSilenceHarness(t)
		wantText(t, "set", onlyReply(t, sh.say(t, "@admin:x", "!silence EVE --until-resolved")), "until it resolves", "at the latest (1d)")
		sh.clock.Advance(2*time.Hour + time.Minute)
		if err := sh.fleet.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		sh.heartbeat(t, sh.fleet)
		ended := sh.sent(t, "silence:")
		if len(ended) != 1 || !strings.HasPrefix(ended[0].Body, "🔔 **Silence 1 on EVE ended**: EVE's alert resolved. It held 1 alert and 0 trips") {
			t.Errorf("the end: %+v", ended)
		}
		if got := sh.sent(t, "fleet:"); len(got) != 0 {
			t.Errorf("the held alert, or its recovery, was posted: %+v", got)
		}
	})
	t.Run("a tripwire's owner silences its source for their own trips", func(t *testing.T) {
		sh := newSilenceHarness(t)
		for _, who := range []string{alice, bob} {
			sh.say(t, who, `!tw arm GI lt 0.7 --label "GI low" --because "x" --push --cooldown 0`)
		}
		wantText(t, "owner", onlyReply(t, sh.say(t, alice, `!silence GI for 1h`)), "Only an admin")
		wantText(t, "owner", onlyReply(t, sh.say(t, alice, `!silence integrity.gi for 1h`)), "the trips of your tripwires reading it")
		sh.tick(t, 0.5)
		if a, b := sh.pushes(t, alice, "trip:"), sh.pushes(t, bob, "trip:"); len(a) != 0 || len(b) != 1 {
			t.Errorf("pushes: alice %d, bob %d; want alice's held and bob's sent", len(a), len(b))
		}
		wantText(t, "not hers", onlyReply(t, sh.say(t, bob, "!silence end 1")), "There is no silence 1 of yours")
		sh.say(t, alice, "!silence end 1")
		if ended := sh.sent(t, "silence:"); len(ended) != 1 || !strings.Contains(ended[0].Body, "ended by @alice:x. It held 0 alerts and 1 trip") {
			t.Errorf("the end: %+v", ended)
		}
	})
	t.Run("an Alertmanager label, listed with who set it", func(t *testing.T) {
		sh := newSilenceHarness(t)
		wantText(t, "set", onlyReply(t, sh.say(t, "@admin:x", `!silence alertname=DiskFull for 1h --because "db upgrade"`)),
			"🔕 Silence 1:", "on alertname=DiskFull until")
		wantText(t, "list", onlyReply(t, sh.say(t, "@admin:x", "!silence list")),
			"alertname=DiskFull until", "by @admin:x because “db upgrade”")
	})
	t.Run("bad input", func(t *testing.T) {
		sh := newSilenceHarness(t)
		for _, c := range []struct{ say, want string }{
			{"!silence EVE", "Say what and for how long"},
			{"!silence --until-resolved EVE", "Name what to silence first"},
			{"!silence EVE for a while", "I can't read `for a while` as a time"},
			{"!silence EVE for 8 days", "a silence lasts 7d at most"},
			{"!silence EVE for 2h --because " + strings.Repeat("x", 201), "at most 200 characters"},
			{"!silence EVE for 2h --loud", "is not a flag of `silence`"},
		} {
			wantText(t, c.say, onlyReply(t, sh.say(t, "@admin:x", c.say)), c.want)
		}
	})
}
