package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestHomeserverOutage stops the homeserver for at least 10 s, with chat
// commands before it, sent as it goes down, and after it, and notices
// written while it is away. Jarvis's log shows that it tried to send
// during the outage and failed; once the homeserver is back, every
// command is answered once and every notice arrives once, counted on the
// homeserver against Jarvis's outbox.
func TestHomeserverOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own := ownHomeserver(t)
	alice := newPersonOn(t, own, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, hs: own})
	room := j.joinRoom(t, alice)
	var asked []id.EventID
	say := func(text string) id.EventID {
		t.Helper()
		sent, err := alice.Say(ctx, room, text)
		if err != nil {
			t.Fatal(err)
		}
		asked = append(asked, sent)
		return sent
	}
	for _, text := range []string{"!ping", "!help"} {
		if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(say(text))); err != nil {
			t.Fatalf("no answer to %q before the outage: %v", text, err)
		}
	}

	// A second writer on Jarvis's own database, as any core service is.
	st := j.openStore(t)

	const sendFailed = `"Failed to send notice"`
	failedBefore := strings.Count(j.logs.String(), sendFailed)
	// Asked as the homeserver goes down: answered before it or after it.
	say("!ping")
	say("!sys status")
	if err := own.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	const queued = 3
	for i := range queued {
		err := st.Outbox().Enqueue(ctx, core.Notice{
			Key: fmt.Sprintf("outage-test:%d", i), RoomID: room.String(), Kind: core.NoticeMessage,
			Body: fmt.Sprintf("queued while the homeserver was away #%d", i),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The homeserver stays down until Jarvis has tried to send (an
	// answer, or a notice: the room's oldest goes first) and failed, and
	// for 10 s at least.
	deadline := time.Now().Add(time.Minute)
	for strings.Count(j.logs.String(), sendFailed) == failedBefore {
		if time.Now().After(deadline) {
			t.Fatalf("no failed send while the homeserver was down:\n%s", j.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Until(stopped.Add(10 * time.Second)))
	if err := own.Restart(); err != nil {
		t.Fatal(err)
	}

	for _, text := range []string{"!ping", "!help"} {
		say(text)
	}
	for _, evt := range asked {
		if _, err := alice.WaitFor(ctx, 30*time.Second, j.replyTo(evt)); err != nil {
			t.Fatalf("command %s never answered across the outage: %v\n%s", evt, err, j.whereIsTheReply(t, alice, room, evt))
		}
	}
	notice := func(i int) func(*event.Event) bool {
		want := fmt.Sprintf("queued while the homeserver was away #%d", i)
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && tesths.Body(evt) == want
		}
	}
	for i := range queued {
		if _, err := alice.WaitFor(ctx, 30*time.Second, notice(i)); err != nil {
			t.Fatalf("notice %d never arrived after the outage: %v\n%s", i, err, j.logs.String())
		}
	}

	events := j.sentOnce(t, alice, room)
	for _, evt := range asked {
		if n := answers(events, evt); n != 1 {
			t.Errorf("command %s answered %d times in the room, want once", evt, n)
		}
	}
	for i := range queued {
		if n := len(alice.Events(notice(i))); n != 1 {
			t.Errorf("notice %d read %d times, want once", i, n)
		}
	}
	waitOutboxEmpty(t, st, 5*time.Second)
}

// waitOutboxEmpty waits until Jarvis has recorded every notice as sent:
// the person may see the last message a moment before Jarvis records it.
func waitOutboxEmpty(t *testing.T, st *store.Store, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		depth, err := st.Outbox().Depth(context.Background())
		if err == nil && depth == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("outbox depth = %d (%v), want 0", depth, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNoticeToNobodyGivenUp: a push to a person who does not exist (the
// real Dendrite would make a direct room for them and invite nobody; its
// profile look-up answers M_NOT_FOUND) is refused core.MaxRefusals times,
// then given up on: kept, never tried again, counted on /metrics, logged
// once and shown in `!sys status`. A notice to the room written after it
// goes at once.
func TestNoticeToNobodyGivenUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\n  metrics_token: %s\n", port, metricsToken)})
	room := j.joinRoom(t, alice)
	st := j.openStore(t)
	ghost := hs.UserID(tesths.RandomName("ghost"))
	for _, n := range []core.Notice{
		{Key: "push:ghost:1", ToUser: ghost.String(), Kind: core.NoticeMessage, Body: "your tripwire tripped"},
		{Key: "room:after-ghost", RoomID: room.String(), Kind: core.NoticeMessage, Body: "written after the push to nobody"},
	} {
		if err := st.Outbox().Enqueue(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && tesths.Body(evt) == "written after the push to nobody"
	}); err != nil {
		t.Fatalf("the room's notice waited behind the push to nobody: %v", err)
	}

	deadline := time.Now().Add(time.Minute)
	var given int
	for given == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the push to nobody was not given up on within a minute:\n%s", j.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
		n, _, err := st.Outbox().GivenUp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		given = n
	}
	e, err := st.Outbox().Get(ctx, "push:ghost:1")
	if err != nil {
		t.Fatal(err)
	}
	if e.Attempts != core.MaxRefusals || !e.SentAt.IsZero() || !strings.Contains(e.LastError, "M_NOT_FOUND") {
		t.Errorf("the push to nobody: %d attempts, sent %v, error %q; want %d refusals (M_NOT_FOUND), not sent",
			e.Attempts, e.SentAt, e.LastError, core.MaxRefusals)
	}
	body := tesths.Body(j.ask(t, alice, room, "!sys status"))
	for _, w := range []string{"0 waiting", "1 notice given up", "push:ghost:1", ghost.String(), "M_NOT_FOUND"} {
		if !strings.Contains(body, w) {
			t.Errorf("!sys status lacks %q:\n%s", w, body)
		}
	}
	if v, err := metricValue(fmt.Sprintf("http://127.0.0.1:%d", port), "jarvis_notices_given_up_total"); err != nil || v != 1 {
		t.Errorf("jarvis_notices_given_up_total = %v, %v; want 1", v, err)
	}
	// Given up, it is never tried again: one log line says so, and no
	// attempt follows.
	time.Sleep(2 * time.Second)
	if e2, err := st.Outbox().Get(ctx, "push:ghost:1"); err != nil || e2.Attempts != e.Attempts {
		t.Errorf("attempts after giving up: %d (%v), want %d", e2.Attempts, err, e.Attempts)
	}
	if n := strings.Count(j.logs.String(), "giving up on it"); n != 1 {
		t.Errorf("%d log lines give up on the notice, want 1", n)
	}
}

// TestSkippedBySyncAnsweredAfterTheOutage: a homeserver going away once
// took Jarvis's sync past a command without handing it over (the sync
// answer's timeline lacked it, while the person's own sync and the room's
// history had it), and no later sync brought it. A proxy does the same
// here: it takes alice's command out of Jarvis's sync and fails the sync
// after it. Once syncing works again, Jarvis reads its rooms back and
// answers the command, once.
func TestSkippedBySyncAnsweredAfterTheOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy := newSkipProxy(t, hs.URL)
	proxied := *hs
	proxied.URL = proxy.URL
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, hs: &proxied})
	room := j.joinRoom(t, alice)

	proxy.skipFrom(alice.UserID)
	cmd, err := alice.Say(ctx, room, "!ping")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case skipped := <-proxy.skipped:
		if !slices.Contains(skipped, cmd.String()) {
			t.Fatalf("the proxy took %v out of Jarvis's sync, not the command %s", skipped, cmd)
		}
	case <-time.After(waitReply):
		t.Fatalf("Jarvis's sync never brought the command")
	}
	if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(cmd)); err != nil {
		t.Fatalf("the command the sync skipped was never answered: %v\n%s", err, j.whereIsTheReply(t, alice, room, cmd))
	}
	// A command after it is answered too, and nothing twice.
	j.ask(t, alice, room, "!help")
	if n := answers(j.sentOnce(t, alice, room), cmd); n != 1 {
		t.Errorf("the skipped command was answered %d times, want once", n)
	}
	if !strings.Contains(j.logs.String(), `"missed":1,`) {
		t.Errorf("Jarvis's log does not say it found the one missed event:\n%s", j.logs.String())
	}
}
