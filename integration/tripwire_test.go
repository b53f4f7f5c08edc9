package integration

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// snapshotFeed serves the terminal snapshot the snapshot source kinds
// read, with a GI the test sets.
type snapshotFeed struct {
	mu     sync.Mutex
	gi     float64
	broken bool // answers 500
}

func newSnapshotFeed(t *testing.T, gi float64) (*snapshotFeed, string) {
	t.Helper()
	f := &snapshotFeed{gi: gi}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.broken {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"integrity": {"gi": %g}, "vault": {"balance": 12}, "micro_agents": {}}`, f.gi)
	}))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *snapshotFeed) setGI(gi float64) {
	f.mu.Lock()
	f.gi = gi
	f.mu.Unlock()
}

func (f *snapshotFeed) setBroken(broken bool) {
	f.mu.Lock()
	f.broken = broken
	f.mu.Unlock()
}

// tripwireJarvis starts a Jarvis reading the feed, ticking every second;
// host is invited to its room.
func tripwireJarvis(t *testing.T, feedURL string, host *tesths.Person) *jarvis {
	return newJarvis(t, options{admins: []id.UserID{host.UserID},
		extra: fmt.Sprintf("sources:\n  snapshot:\n    url: %s\ntripwires:\n  tick: 1s\n", feedURL)})
}

// tripped matches the trip notice of the tripwire labelled label.
func tripped(j *jarvis, label string) func(*event.Event) bool {
	return func(evt *event.Event) bool {
		return evt.Type == event.EventMessage && evt.Sender == j.UserID && strings.Contains(tesths.Body(evt), "Tripwire tripped: "+label)
	}
}

var tripwireIDs = regexp.MustCompile(`tw_[a-z0-9]+_[a-z2-7]+`)

// TestTripwirePushAndJournal: a pushed trip mentions the person in their
// direct room with Jarvis, saying what tripped, the value, the rule and
// why they armed it; when the value recovers, "Cleared at …" follows in
// its thread. A journal-only trip sends nothing and waits in `!tw journal`.
func TestTripwirePushAndJournal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	feed, url := newSnapshotFeed(t, 0.80)
	alice := newPerson(t, "alice")
	j := tripwireJarvis(t, url, alice)
	room := j.joinRoom(t, alice)

	for _, arm := range []string{
		`!tw arm integrity.gi lt 0.70 --label "GI low" --because "the Seal needs GI above 0.7" --push`,
		`!tw arm integrity.gi lt 0.70 --label "GI quiet" --because "only for the record"`,
	} {
		if body := tesths.Body(j.ask(t, alice, room, arm)); !strings.HasPrefix(body, "Armed — tw_") {
			t.Fatalf("%s got %q", arm, body)
		}
	}

	feed.setGI(0.65)
	trip, err := alice.WaitFor(ctx, waitReply, tripped(j, "GI low"))
	if err != nil {
		t.Fatalf("no trip notice: %v", err)
	}
	t.Run("the trip notice mentions the person in their direct room", func(t *testing.T) {
		if trip.RoomID == room {
			t.Errorf("the trip notice went to the shared room")
		}
		body := tesths.Body(trip)
		for _, w := range []string{"GI low", "integrity.gi is 0.65", "integrity.gi < 0.7", "the Seal needs GI above 0.7"} {
			if !strings.Contains(body, w) {
				t.Errorf("the trip notice lacks %q:\n%s", w, body)
			}
		}
		if m := trip.Content.AsMessage().Mentions; m == nil || !slices.Contains(m.UserIDs, alice.UserID) {
			t.Errorf("the trip notice does not mention %s: %+v", alice.UserID, m)
		}
	})

	t.Run("a journal-only trip waits in the journal", func(t *testing.T) {
		body := tesths.Body(j.ask(t, alice, room, "!tw journal"))
		for _, w := range []string{"Since you last looked", "GI quiet", "GI low", "integrity.gi is 0.65"} {
			if !strings.Contains(body, w) {
				t.Errorf("the journal lacks %q:\n%s", w, body)
			}
		}
		if body := tesths.Body(j.ask(t, alice, room, "!tw journal")); !strings.Contains(body, "Nothing new since you last looked") {
			t.Errorf("the journal read twice says %q", body)
		}
	})

	feed.setGI(0.80)
	t.Run("the reset is threaded under the trip notice", func(t *testing.T) {
		cleared, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
			if evt.Type != event.EventMessage || evt.Sender != j.UserID || evt.RoomID != trip.RoomID {
				return false
			}
			msg := evt.Content.AsMessage()
			rel := msg.RelatesTo
			return msg.MsgType != event.MsgImage && rel != nil && rel.Type == event.RelThread && rel.EventID == trip.ID
		})
		if err != nil {
			t.Fatalf("nothing but the chart in the trip notice's thread: %v", err)
		}
		if body := tesths.Body(cleared); !strings.HasPrefix(body, "✅ Cleared at ") || !strings.Contains(body, "integrity.gi is 0.8") {
			t.Errorf("the thread says %q", body)
		}
	})

	t.Run("the journal-only trip sent nothing to any room", func(t *testing.T) {
		if got := alice.Events(tripped(j, "GI quiet")); len(got) != 0 {
			t.Errorf("a journal-only trip was sent: %q", tesths.Body(got[0]))
		}
		if got := alice.Events(tripped(j, "GI low")); len(got) != 1 {
			var where []string
			for _, evt := range got {
				where = append(where, fmt.Sprintf("%s in %s", evt.ID, evt.RoomID))
			}
			t.Errorf("the pushed trip was sent %d times: %s", len(got), strings.Join(where, ", "))
		}
	})
}

// TestConversationalArming: a sentence in the room becomes a proposal
// with ✅ ❌ on it. Another person's ✅ does nothing; the proposer's arms
// it, once; ❌ dismisses a proposal; the reply "arm" arms one.
func TestConversationalArming(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, url := newSnapshotFeed(t, 0.80)
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	j := tripwireJarvis(t, url, alice)
	room := j.joinRoom(t, alice)
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: bob.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinRoom(t, bob)

	propose := func(text string) *event.Event {
		t.Helper()
		q := j.ask(t, alice, room, text)
		for _, r := range []string{"✅", "❌"} {
			if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, q.ID, r)); err != nil {
				t.Fatalf("no %s on the proposal %q: %v", r, tesths.Body(q), err)
			}
		}
		return q
	}
	listed := func(who *tesths.Person) []string {
		t.Helper()
		ids := tripwireIDs.FindAllString(tesths.Body(j.ask(t, who, room, "!tw list")), -1)
		slices.Sort(ids)
		return slices.Compact(ids)
	}
	edits := func(q *event.Event) []*event.Event { return alice.Events(editOf(j.UserID, q.ID)) }

	first := propose("tell me when GI drops below 0.70")
	t.Run("the proposal says what, the rule, the action and the cooldown", func(t *testing.T) {
		body := tesths.Body(first)
		for _, w := range []string{"GI below 0.70", "integrity.gi < 0.7", "I message you directly", "1h between trips", "React ✅ to arm, ❌ to dismiss."} {
			if !strings.Contains(body, w) {
				t.Errorf("the proposal lacks %q:\n%s", w, body)
			}
		}
	})

	t.Run("another person's ✅ does nothing", func(t *testing.T) {
		if _, err := bob.SendReaction(ctx, room, first.ID, "✅"); err != nil {
			t.Fatal(err)
		}
		// Jarvis reads the room in order: by the time it answers this,
		// it has seen Bob's ✅.
		if got := listed(alice); len(got) != 0 {
			t.Errorf("Bob's ✅ armed %q", got)
		}
		if got := listed(bob); len(got) != 0 {
			t.Errorf("Bob has tripwires: %q", got)
		}
		if n := len(edits(first)); n != 0 {
			t.Errorf("the proposal was edited %d times", n)
		}
	})

	var armed string
	t.Run("the proposer's ✅ arms it", func(t *testing.T) {
		if _, err := alice.SendReaction(ctx, room, first.ID, "✅"); err != nil {
			t.Fatal(err)
		}
		edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, first.ID))
		if err != nil {
			t.Fatalf("the proposal was not edited: %v", err)
		}
		body := newBody(edit)
		if !strings.HasPrefix(body, "Armed — tw_") || !strings.Contains(body, "integrity.gi < 0.7") {
			t.Fatalf("the proposal now says %q", body)
		}
		armed = tripwireIDs.FindString(body)
		if got := listed(alice); !slices.Equal(got, []string{armed}) {
			t.Errorf("!tw list shows %q, want %s", got, armed)
		}
	})

	t.Run("a second ✅ arms nothing twice", func(t *testing.T) {
		mine := alice.Events(func(evt *event.Event) bool {
			return reactionBy(alice.UserID, first.ID, "✅")(evt)
		})
		if len(mine) == 0 {
			t.Fatal("Alice's ✅ is not in the room")
		}
		if _, err := alice.RedactEvent(ctx, room, mine[0].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := alice.SendReaction(ctx, room, first.ID, "✅"); err != nil {
			t.Fatal(err)
		}
		if got := listed(alice); !slices.Equal(got, []string{armed}) {
			t.Errorf("after a second ✅, !tw list shows %q, want only %s", got, armed)
		}
		if n := len(edits(first)); n != 1 {
			t.Errorf("the proposal was edited %d times, want once", n)
		}
	})

	t.Run("❌ dismisses another proposal", func(t *testing.T) {
		q := propose("ping me when the vault goes above 45")
		if _, err := alice.SendReaction(ctx, room, q.ID, "❌"); err != nil {
			t.Fatal(err)
		}
		edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, q.ID))
		if err != nil {
			t.Fatalf("the proposal was not edited: %v", err)
		}
		if body := newBody(edit); !strings.HasPrefix(body, "Dismissed") {
			t.Errorf("the dismissed proposal says %q", body)
		}
	})

	t.Run("the reply arm arms a third", func(t *testing.T) {
		q := propose("let me know if GI drops below 0.5")
		reply := &event.MessageEventContent{MsgType: event.MsgText, Body: "arm",
			RelatesTo: &event.RelatesTo{InReplyTo: &event.InReplyTo{EventID: q.ID}}}
		if _, err := alice.SendMessageEvent(ctx, room, event.EventMessage, reply); err != nil {
			t.Fatal(err)
		}
		edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, q.ID))
		if err != nil {
			t.Fatalf("the proposal was not edited: %v", err)
		}
		body := newBody(edit)
		if !strings.HasPrefix(body, "Armed — tw_") || !strings.Contains(body, "integrity.gi < 0.5") {
			t.Fatalf("the proposal now says %q", body)
		}
		if got := listed(alice); len(got) != 2 || !slices.Contains(got, armed) {
			t.Errorf("!tw list shows %q, want two with %s", got, armed)
		}
	})
}

// TestTripChartImage: a pushed trip on a snapshot source brings, in the
// trip notice's thread, an m.image of the source's last day whose bytes,
// downloaded from the media repository and decrypted (the direct room is
// encrypted), are a PNG of the width and height its info states, with a
// body that says in words what it shows.
func TestTripChartImage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	feed, url := newSnapshotFeed(t, 0.80)
	alice := newPerson(t, "alice")
	j := tripwireJarvis(t, url, alice)
	room := j.joinRoom(t, alice)
	arm := `!tw arm integrity.gi lt 0.70 --label "GI low" --because "the Seal needs GI above 0.7" --push`
	if body := tesths.Body(j.ask(t, alice, room, arm)); !strings.HasPrefix(body, "Armed — tw_") {
		t.Fatalf("%s got %q", arm, body)
	}
	feed.setGI(0.65)
	trip, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return evt.Type == event.EventMessage && evt.Sender == j.UserID && strings.Contains(tesths.Body(evt), "Tripwire tripped: GI low")
	})
	if err != nil {
		t.Fatalf("no trip notice: %v", err)
	}
	img, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		if evt.Type != event.EventMessage || evt.Sender != j.UserID || evt.RoomID != trip.RoomID {
			return false
		}
		msg := evt.Content.AsMessage()
		return msg.MsgType == event.MsgImage && msg.RelatesTo != nil && msg.RelatesTo.Type == event.RelThread && msg.RelatesTo.EventID == trip.ID
	})
	if err != nil {
		t.Fatalf("no image in the trip notice's thread: %v", err)
	}
	msg := img.Content.AsMessage()
	if msg.File == nil || msg.URL != "" {
		t.Fatalf("the image in an encrypted room has file %v and url %q, want an encrypted file only", msg.File, msg.URL)
	}
	if msg.Info == nil || msg.Info.MimeType != "image/png" || msg.Info.Width != 800 || msg.Info.Height != 400 {
		t.Fatalf("image info = %+v, want image/png 800 × 400", msg.Info)
	}
	for _, w := range []string{"Chart of integrity.gi", "The red line marks the threshold 0.7.", "Tripped at", "at 0.65."} {
		if !strings.Contains(msg.Body, w) {
			t.Errorf("the image's body lacks %q: %q", w, msg.Body)
		}
	}
	checkChartPNG(t, alice, msg)
}

// checkChartPNG downloads an encrypted image as p, decrypts it, and checks
// that it is a PNG of the width, height and size its info states.
func checkChartPNG(t *testing.T, p *tesths.Person, msg *event.MessageEventContent) {
	t.Helper()
	if msg.File == nil || msg.URL != "" || msg.Info == nil {
		t.Fatalf("the image has file %v, url %q, info %v; want an encrypted file with its info", msg.File, msg.URL, msg.Info)
	}
	mxc, err := msg.File.URL.Parse()
	if err != nil {
		t.Fatal(err)
	}
	data, err := p.DownloadBytes(context.Background(), mxc)
	if err != nil {
		t.Fatalf("%s downloads the image: %v", p.UserID, err)
	}
	plain := data
	if err := msg.File.DecryptInPlace(plain); err != nil {
		t.Fatalf("%s decrypts the image: %v", p.UserID, err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(plain))
	if err != nil {
		t.Fatalf("the image %s decrypted is no PNG: %v", p.UserID, err)
	}
	if cfg.Width != msg.Info.Width || cfg.Height != msg.Info.Height || len(plain) != msg.Info.Size {
		t.Errorf("the PNG is %d × %d, %d bytes; its info says %d × %d, %d bytes", cfg.Width, cfg.Height, len(plain), msg.Info.Width, msg.Info.Height, msg.Info.Size)
	}
}

// TestChartInSharedRoom: `!tw chart` in the encrypted dedicated room
// answers with an encrypted m.image that both people in the room decrypt
// to the same PNG.
func TestChartInSharedRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, url := newSnapshotFeed(t, 0.80)
	alice, bob := newPerson(t, "alice"), newPerson(t, "bob")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID, bob.UserID},
		extra: fmt.Sprintf("sources:\n  snapshot:\n    url: %s\ntripwires:\n  tick: 1s\n", url)})
	room := j.joinRoom(t, alice)
	if got := j.joinRoom(t, bob); got != room {
		t.Fatalf("bob joined %s, alice %s", got, room)
	}
	armed := tesths.Body(j.ask(t, alice, room, `!tw arm integrity.gi lt 0.70 --label "GI low" --because "the Seal needs GI above 0.7"`))
	id := tripwireIDs.FindString(armed)
	if id == "" {
		t.Fatalf("not armed: %q", armed)
	}
	sent, err := alice.Say(ctx, room, "!tw chart "+id)
	if err != nil {
		t.Fatal(err)
	}
	isChart := func(evt *event.Event) bool {
		msg := evt.Content.AsMessage()
		return evt.Sender == j.UserID && evt.RoomID == room && msg.MsgType == event.MsgImage && msg.RelatesTo.GetReplyTo() == sent
	}
	for _, p := range []*tesths.Person{alice, bob} {
		evt, err := p.WaitFor(ctx, waitReply, isChart)
		if err != nil {
			t.Fatalf("%s sees no chart: %v", p.UserID, err)
		}
		msg := evt.Content.AsMessage()
		if !strings.Contains(msg.Body, "Chart of integrity.gi") || !strings.Contains(msg.Body, "threshold 0.7") {
			t.Errorf("%s reads the chart's body %q", p.UserID, msg.Body)
		}
		checkChartPNG(t, p, msg)
	}
}

// TestTripwireSkipLog: a tripwire that matches inside its cooldown, then
// whose source fails, logs each skipped evaluation with its reason and a
// null observation; `GET /api/tripwires/{id}/skips` counts them by reason
// and `!tw show` says "Skipped N times today: cooldown N, source error N".
func TestTripwireSkipLog(t *testing.T) {
	t.Parallel()
	feed, url := newSnapshotFeed(t, 0.65)
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\nsources:\n  snapshot:\n    url: %s\ntripwires:\n  tick: 1s\n", port, url)})
	room := j.joinRoom(t, alice)
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	api.waitUp(t, j)
	since := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	armed := tesths.Body(j.ask(t, alice, room, `!tw arm integrity.gi lt 0.70 --label "GI low" --because "the Seal needs GI above 0.7"`))
	twID := tripwireIDs.FindString(armed)
	if twID == "" {
		t.Fatalf("arming got %q", armed)
	}
	token := regexp.MustCompile(`jtw_[A-Za-z0-9_-]+`).FindString(tesths.Body(j.ask(t, alice, j.directRoom(t, alice), "!tw token laptop")))
	if token == "" {
		t.Fatal("alice got no personal token")
	}

	// skips reads the log until it holds at least one skip of reason.
	skips := func(reason string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(waitReply)
		for {
			code, out := api.callWith(t, token, http.MethodGet, "/api/tripwires/"+twID+"/skips?since="+since+"&limit=3", nil)
			if code != http.StatusOK {
				t.Fatalf("GET skips: %d %v", code, out)
			}
			if counts, _ := out["counts"].(map[string]any); counts[reason] != nil {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s skip logged within %s: %v", reason, waitReply, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	skips("cooldown")
	feed.setBroken(true)
	out := skips("source-error")
	latest, _ := out["latest"].([]any)
	last, _ := latest[len(latest)-1].(map[string]any)
	if v, present := last["observed_value"]; !present || v != nil || last["skip_reason"] != "source-error" || last["detail"] == "" {
		t.Errorf("the newest skip is %v, want a source error with its detail and a null observation", last)
	}

	day := time.Now().UTC().YearDay()
	body := tesths.Body(j.ask(t, alice, room, "!tw show "+twID))
	// Twelve source errors in a row quarantine it (a busy machine may get there).
	m := regexp.MustCompile(`Skipped (\d+) times today: cooldown (\d+), source error (\d+)(?:, quarantine (1))?\n`).FindStringSubmatch(body)
	if time.Now().UTC().YearDay() != day {
		return // midnight passed: today's counts started again
	}
	if m == nil {
		t.Fatalf("!tw show does not count the skips by reason:\n%s", body)
	}
	if total, cool, bad := atoi(m[1]), atoi(m[2]), atoi(m[3]); total != cool+bad+atoi(m[4]) || cool < 1 || bad < 1 {
		t.Errorf("!tw show says %q", m[0])
	}
}

// atoi reads a number a pattern matched; "" is 0.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestStarterTemplatesOnDefaultInstall: with no snapshot source and no
// agent configured, `!tw templates` still offers the starters built on
// what Jarvis reads itself (the cards), each as a proposal with ✅ ❌ on
// it; listing them arms nothing, and one tap arms that one only.
func TestStarterTemplatesOnDefaultInstall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	sent, err := alice.Say(ctx, room, "!tw templates")
	if err != nil {
		t.Fatal(err)
	}
	header, err := alice.WaitFor(ctx, waitReply, j.replyTo(sent))
	if err != nil {
		t.Fatalf("no answer to !tw templates: %v", err)
	}
	if body := tesths.Body(header); !strings.Contains(body, "nothing is armed until you tap ✅ on one") ||
		!strings.Contains(body, "Agent goes offline: no agent reports yet") {
		t.Errorf("!tw templates says %q", body)
	}
	proposal := func(label string) *event.Event {
		t.Helper()
		q, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
			return j.replyTo(sent)(evt) && strings.Contains(tesths.Body(evt), label+": ") && strings.Contains(tesths.Body(evt), "React ✅ to arm")
		})
		if err != nil {
			t.Fatalf("no proposal of %q: %v", label, err)
		}
		for _, r := range []string{"✅", "❌"} {
			if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, q.ID, r)); err != nil {
				t.Fatalf("no %s on the proposal of %q: %v", r, label, err)
			}
		}
		return q
	}
	blocked := proposal("A card is blocked")
	proposal("A card waits for your decision")
	if ids := tripwireIDs.FindAllString(tesths.Body(j.ask(t, alice, room, "!tw list")), -1); len(ids) != 0 {
		t.Fatalf("listing the starters armed %q", ids)
	}
	if _, err := alice.SendReaction(ctx, room, blocked.ID, "✅"); err != nil {
		t.Fatal(err)
	}
	edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, blocked.ID))
	if err != nil {
		t.Fatalf("the starter was not armed: %v", err)
	}
	armed := tripwireIDs.FindString(newBody(edit))
	if !strings.HasPrefix(newBody(edit), "Armed — tw_") || !strings.Contains(newBody(edit), "cards.blocked > 0") {
		t.Fatalf("the starter now says %q", newBody(edit))
	}
	ids := tripwireIDs.FindAllString(tesths.Body(j.ask(t, alice, room, "!tw list")), -1)
	slices.Sort(ids)
	if ids = slices.Compact(ids); !slices.Equal(ids, []string{armed}) {
		t.Errorf("!tw list shows %q, want only %s", ids, armed)
	}
}
