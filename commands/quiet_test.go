package commands

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
)

// pushes returns the messages queued to who's direct room whose keys
// start with prefix, oldest first.
func (th *twHarness) pushes(t *testing.T, who, prefix string) []core.OutboxEntry {
	t.Helper()
	waiting, err := th.store.Outbox().Waiting(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []core.OutboxEntry
	for _, e := range waiting {
		if e.ToUser == who && e.Kind == core.NoticeMessage && strings.HasPrefix(e.Key, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// sweepQuiet runs the digest loop once at the clock's time.
func (th *twHarness) sweepQuiet(t *testing.T) {
	t.Helper()
	if _, err := th.quiet.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestQuietHoursHoldPushesForOneDigest: Alice in Berlin sets quiet hours
// 22:00–07:00; a tripwire that trips twice in the night pushes nothing
// then, and at 07:00 her time she gets one digest with both trips, its
// untrusted label escaped; after that her pushes come as they trip again,
// and Bob, who set no quiet hours, was never held.
func TestQuietHoursHoldPushesForOneDigest(t *testing.T) {
	th := newTripwireHarness(t, 0)
	svc := services.Wiring{Store: th.store, Clock: th.clock}.Reminders()
	th.proc.AddFeatures(Features{Reminders: svc, People: th.store.Reminders(), Quiet: th.quiet})

	wantText(t, "no hours yet", onlyReply(t, th.say(t, alice, "!me")), "Quiet hours: none", "!me quiet 22:00-07:00")
	wantText(t, "bad hours", onlyReply(t, th.say(t, alice, "!me quiet 22:00-22:00")), "Not set", "start and end are the same time")
	th.say(t, alice, "!me tz Europe/Berlin")
	wantText(t, "set", onlyReply(t, th.say(t, alice, "!me quiet 22:00-07:00")), "Quiet hours 22:00–07:00 (Europe/Berlin)", "one digest")
	wantText(t, "shown", onlyReply(t, th.say(t, alice, "!me")), "Your time zone: Europe/Berlin", "Quiet hours: 22:00–07:00", "!me quiet off")

	m := armedID.FindStringSubmatch(onlyReply(t, th.say(t, alice, `!tw arm GI lt 0.7 --label "GI *low* <b>" --because "the Seal" --push --cooldown 0`)))
	b := armedID.FindStringSubmatch(onlyReply(t, th.say(t, bob, `!tw arm GI lt 0.7 --label "Bob's GI" --because "mine" --push --cooldown 0`)))
	reply := onlyReply(t, th.say(t, alice, `!tw arm GI lt 0.45 --label "GI collapsing" --because "wake me" --urgent --cooldown 0`))
	wantText(t, "urgent", reply, "even in your quiet hours")
	u := armedID.FindStringSubmatch(reply)
	if m == nil || b == nil || u == nil {
		t.Fatal("not armed")
	}

	// 22:30 in Berlin: the trip is journaled, its push held.
	th.clock.Set(time.Date(2026, 11, 30, 21, 29, 0, 0, time.UTC))
	th.tick(t, 0.5)
	if got := th.pushes(t, alice, "trip:"); len(got) != 0 {
		t.Fatalf("pushed in quiet hours: %+v", got)
	}
	if got := th.pushes(t, bob, "trip:"); len(got) != 1 {
		t.Fatalf("Bob, with no quiet hours, got %d pushes, want 1", len(got))
	}
	th.sweepQuiet(t)
	if got := th.pushes(t, alice, "quiet:"); len(got) != 0 {
		t.Fatalf("a digest before the hours ended: %+v", got)
	}
	// It clears (no reply in a thread that was never sent) and trips again at 03:00.
	th.tick(t, 0.8)
	if got := th.pushes(t, alice, "trip:"); len(got) != 0 {
		t.Fatalf("a held trip's reset replied: %+v", got)
	}
	th.clock.Set(time.Date(2026, 12, 1, 1, 59, 0, 0, time.UTC))
	th.tick(t, 0.5)
	if got := th.pushes(t, alice, "trip:"); len(got) != 0 {
		t.Fatalf("pushed in quiet hours: %+v", got)
	}
	// GI collapses: the urgent tripwire breaks through at once.
	th.tick(t, 0.4)
	if got := th.pushes(t, alice, "trip:"); len(got) != 1 || got[0].Key != "trip:"+u[1]+":1" {
		t.Fatalf("an urgent trip in quiet hours got %+v, want it pushed", got)
	}
	th.clock.Set(time.Date(2026, 12, 1, 5, 59, 0, 0, time.UTC))
	th.sweepQuiet(t)
	if got := th.pushes(t, alice, "quiet:"); len(got) != 0 {
		t.Fatalf("a digest at 06:59 Berlin: %+v", got)
	}

	// 07:00 in Berlin: one digest with both trips.
	th.clock.Set(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC))
	th.sweepQuiet(t)
	th.sweepQuiet(t)
	digests := th.pushes(t, alice, "quiet:")
	if len(digests) != 1 {
		t.Fatalf("got %d digests, want one", len(digests))
	}
	d := digests[0]
	if !slices.Equal(d.Mentions, []string{alice}) {
		t.Errorf("the digest mentions %q, want Alice", d.Mentions)
	}
	wantText(t, "digest", d.Body, "While your quiet hours held them (22:00–07:00):** 2 trips",
		"- Mon 22:30 **GI \\*low\\* \\<b\\>**: integrity.gi is 0.5", "trip 1",
		"- Tue 03:00 **GI \\*low\\* \\<b\\>**: integrity.gi is 0.5", "trip 2", m[1])
	if strings.Contains(d.Body, "collapsing") {
		t.Errorf("the digest holds the urgent trip that was pushed:\n%s", d.Body)
	}
	if strings.Contains(d.Body, "Bob") || strings.Contains(d.Body, "3 trips") {
		t.Errorf("Alice's digest shows Bob's tripwire:\n%s", d.Body)
	}

	// Awake: the next trip is pushed at once.
	th.tick(t, 0.9)
	th.tick(t, 0.3)
	if got := th.pushes(t, alice, "trip:"+m[1]+":"); len(got) != 1 || got[0].Key != "trip:"+m[1]+":3" {
		t.Fatalf("after the quiet hours got %+v, want trip 3 pushed", got)
	}

	// Off: nothing is held at night any more.
	wantText(t, "off", onlyReply(t, th.say(t, alice, "!me quiet off")), "Quiet hours off")
	th.clock.Set(time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC))
	th.tick(t, 0.9)
	th.tick(t, 0.3)
	if got := th.pushes(t, alice, "trip:"+m[1]+":"); len(got) == 0 || got[len(got)-1].Key != "trip:"+m[1]+":4" {
		t.Fatalf("with quiet hours off at midnight got %+v, want trip 4 pushed", got)
	}
}

// TestDailyDigestAtNineInBerlin: Alice in Berlin asks for a daily digest
// at 09:00; her journal-only tripwire's trips push nothing, and at 09:00
// her time one message sums up those since the last digest; a trip after
// 09:00 waits for the next morning, or for `!me digest off`.
func TestDailyDigestAtNineInBerlin(t *testing.T) {
	th := newTripwireHarness(t, 0)
	svc := services.Wiring{Store: th.store, Clock: th.clock}.Reminders()
	th.proc.AddFeatures(Features{Reminders: svc, People: th.store.Reminders(), Quiet: th.quiet})

	th.say(t, alice, "!me tz Europe/Berlin")
	wantText(t, "not a time", onlyReply(t, th.say(t, alice, "!me digest daily soon")), "Not set", "times of day like 22:00")
	wantText(t, "set", onlyReply(t, th.say(t, alice, "!me digest daily 9:00")), "Daily digest at 09:00 (Europe/Berlin)")
	wantText(t, "shown", onlyReply(t, th.say(t, alice, "!me")), "Daily digest: at 09:00", "!me digest off")
	m := armedID.FindStringSubmatch(onlyReply(t, th.say(t, alice, `!tw arm GI lt 0.7 --label "GI [low](x)" --because "the Seal" --cooldown 0`)))
	if m == nil {
		t.Fatal("not armed")
	}

	// Monday 10:01 and 23:01 in Berlin: journaled, nothing sent.
	th.tick(t, 0.5)
	th.sweepQuiet(t)
	th.tick(t, 0.8)
	th.clock.Set(time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC))
	th.tick(t, 0.6)
	th.clock.Set(time.Date(2026, 12, 1, 7, 59, 0, 0, time.UTC))
	th.sweepQuiet(t)
	if got := th.pushes(t, alice, ""); len(got) != 0 {
		t.Fatalf("sent before 09:00 Berlin: %+v", got)
	}

	// Tuesday 09:00 in Berlin: one digest with both.
	th.clock.Set(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	th.sweepQuiet(t)
	th.sweepQuiet(t)
	digests := th.pushes(t, alice, "daily:")
	if len(digests) != 1 {
		t.Fatalf("got %d digests, want one", len(digests))
	}
	wantText(t, "digest", digests[0].Body, "☀️ **Your daily digest:** 2 trips only journaled",
		"- Mon 10:01 **GI \\[low\\](x)**: integrity.gi is 0.5", "- Mon 23:01 **GI \\[low\\](x)**: integrity.gi is 0.6", m[1])

	// 09:31: the trip waits for tomorrow, or for the digest to be turned off.
	th.tick(t, 0.8)
	th.clock.Set(time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC))
	th.tick(t, 0.3)
	th.sweepQuiet(t)
	if got := th.pushes(t, alice, ""); len(got) != 1 {
		t.Fatalf("after 09:00 got %d messages, want the one digest", len(got))
	}
	wantText(t, "off", onlyReply(t, th.say(t, alice, "!me digest off")), "Daily digest off")
	th.sweepQuiet(t)
	if got := th.pushes(t, alice, "daily:"); len(got) != 2 || !strings.Contains(got[1].Body, "**Your daily digest:** 1 trip only") {
		t.Fatalf("after off got %+v, want a last digest of the one trip", got)
	}
}
