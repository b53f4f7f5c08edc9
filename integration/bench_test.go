package integration

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// BenchmarkRoundTrip measures a chat round trip through the real
// homeserver: a person sends !ping and sees the answer. "jarvis" is the
// real binary; "echo" is a bare mautrix client with the same crypto as
// Jarvis (cryptohelper) that answers every message at once, the floor any
// bot on this homeserver can reach. Both run in an encrypted room
// (Jarvis's default) and in a plaintext one, so that each pair compares
// like with like; every answer must arrive encrypted, or in the clear, as
// its room is. The two sides take turns, one round trip each, in one loop,
// so that a machine that gets busier or quieter during the run weighs on
// both alike: the ratio of their p95s is what the target is about. make
// bench runs 200 rounds (400 round trips).
func BenchmarkRoundTrip(b *testing.B) {
	for _, kind := range []struct {
		name      string
		encrypted bool
	}{{"encrypted", true}, {"plaintext", false}} {
		b.Run(kind.name, func(b *testing.B) {
			ctx := context.Background()
			alice := newPerson(b, "alice")
			// One person sends every round trip as fast as Jarvis answers:
			// far past a person's sender limit, which is not what is measured.
			j := newJarvis(b, options{admins: []id.UserID{alice.UserID}, plaintext: !kind.encrypted,
				extra: "chat:\n  sender_limit:\n    per_second: 1000\n    burst: 1000\n"})
			// joinRoom greets Jarvis through the encrypted room; a
			// plaintext room has nothing to wait for but the join.
			var room id.RoomID
			if kind.encrypted {
				room = j.joinRoom(b, alice)
			} else {
				room = j.enter(b, alice)
			}
			jarvisSide := &roundTripper{name: "jarvis", person: alice, room: room, replyTo: func(sent id.EventID) func(*event.Event) bool {
				reply := j.replyTo(sent)
				return func(evt *event.Event) bool { return tesths.Encrypted(evt) == kind.encrypted && reply(evt) }
			}}

			echo := startEcho(b)
			req := &mautrix.ReqCreateRoom{Invite: []id.UserID{echo.UserID}, Preset: "private_chat"}
			if kind.encrypted {
				stateKey := ""
				req.InitialState = []*event.Event{{Type: event.StateEncryption, StateKey: &stateKey,
					Content: event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}}}}
			}
			created, err := alice.CreateRoom(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := echo.WaitFor(ctx, 20*time.Second, func(evt *event.Event) bool {
				return evt.RoomID == created.RoomID && evt.Type == event.StateMember && evt.GetStateKey() == echo.UserID.String() &&
					evt.Content.AsMember().Membership == event.MembershipJoin
			}); err != nil {
				b.Fatal(err)
			}
			if kind.encrypted {
				waitEncrypted(b, created.RoomID, alice, echo)
			}
			echoSide := &roundTripper{name: "echo", person: alice, room: created.RoomID, replyTo: func(sent id.EventID) func(*event.Event) bool {
				return func(evt *event.Event) bool {
					if evt.Type != event.EventMessage || evt.Sender != echo.UserID || tesths.Encrypted(evt) != kind.encrypted {
						return false
					}
					msg := evt.Content.AsMessage()
					return msg.RelatesTo != nil && msg.RelatesTo.GetReplyTo() == sent
				}
			}}
			measureRoundTrips(b, jarvisSide, echoSide)
		})
	}
}

// waitEncrypted waits until every one of people knows that room is
// encrypted, so that what they say there is encrypted.
func waitEncrypted(b *testing.B, room id.RoomID, people ...*tesths.Person) {
	b.Helper()
	for _, p := range people {
		if err := p.WaitEncrypted(context.Background(), room, 20*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// roundTripper is one side of a round-trip comparison: who pings, where,
// and how its answer is recognised.
type roundTripper struct {
	name string
	// text is what the person says; "!ping" when empty.
	text      string
	person    *tesths.Person
	room      id.RoomID
	replyTo   func(id.EventID) func(*event.Event) bool
	durations []time.Duration
}

// once sends !ping and waits for the answer, and keeps how long it took
// when measured.
func (r *roundTripper) once(b *testing.B, measured bool) {
	ctx := context.Background()
	start := time.Now()
	text := r.text
	if text == "" {
		text = "!ping"
	}
	sent, err := r.person.Say(ctx, r.room, text)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.person.WaitFor(ctx, 20*time.Second, r.replyTo(sent)); err != nil {
		b.Fatalf("%s: no answer to %q: %v", r.name, text, err)
	}
	if measured {
		r.durations = append(r.durations, time.Since(start))
	}
}

// measureRoundTrips runs b.N rounds in which every side makes one round
// trip, the side going first changing each round, after one warm-up round
// trip each outside the measurement. It reports each side's p50, p95 and
// p99 (e.g. "jarvis-p95-ms") and, for two sides, the ratio of the first
// side's p95 to the second's ("p95-ratio").
func measureRoundTrips(b *testing.B, sides ...*roundTripper) {
	for _, s := range sides {
		s.once(b, false)
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range sides {
			sides[(i+k)%len(sides)].once(b, true)
		}
	}
	b.StopTimer()
	p95 := make([]float64, len(sides))
	for k, s := range sides {
		p95[k] = reportLatencies(b, s.name+"-", s.durations)
	}
	if len(sides) == 2 {
		b.ReportMetric(p95[0]/p95[1], "p95-ratio")
	}
}

// reportLatencies reports the median and the tail of durations, each
// metric's name starting with prefix, and returns the p95 in ms.
func reportLatencies(b *testing.B, prefix string, durations []time.Duration) float64 {
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	pct := func(q float64) float64 {
		return float64(durations[min(len(durations)-1, int(q*float64(len(durations))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), prefix+"p50-ms")
	b.ReportMetric(pct(0.95), prefix+"p95-ms")
	b.ReportMetric(pct(0.99), prefix+"p99-ms")
	return pct(0.95)
}

// startEcho registers a bare mautrix client, with its own crypto, that
// joins when invited and answers every message with a reply carrying the
// same text (encrypted in an encrypted room).
func startEcho(b *testing.B) *tesths.Person {
	ctx := context.Background()
	cli, err := hs.Register(ctx, tesths.RandomName("echo"), "echo-password")
	if err != nil {
		b.Fatal(err)
	}
	p, err := tesths.Watch(ctx, cli)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Stop)
	p.OnEvent(func(ctx context.Context, evt *event.Event) {
		if evt.Type != event.EventMessage || evt.Sender == cli.UserID {
			return
		}
		content := &event.MessageEventContent{MsgType: event.MsgText, Body: tesths.Body(evt),
			RelatesTo: &event.RelatesTo{InReplyTo: &event.InReplyTo{EventID: evt.ID}}}
		if _, err := cli.SendMessageEvent(ctx, evt.RoomID, event.EventMessage, content); err != nil && ctx.Err() == nil {
			b.Logf("echo could not answer %s: %v", evt.ID, err)
		}
	})
	return p
}

// wakeRoundGap is a little more than the least time between two wake
// rounds that changes ask for.
const wakeRoundGap = 1100 * time.Millisecond

// BenchmarkWakeRouter measures the wake router end to end: a worker blocks
// a ratified card over the API, and the person who ratified it sees the
// router's notice in the room. Each operation is one such notice (the
// worker unblocks the card between them and the alert's all-clear comes,
// outside the measurement); make bench runs 100.
func BenchmarkWakeRouter(b *testing.B) {
	ctx := context.Background()
	w := newWakeSetup(b)
	setState := func(state, note string) {
		w.api.call(http.MethodPost, "/api/cards/"+w.card+"/state", nil, map[string]any{"state": state, "note": note}, http.StatusOK, nil)
	}
	setState("claimed", "working")
	durations := make([]time.Duration, 0, b.N)
	var alert *event.Event
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		setState("in_progress", "working")
		// Jarvis starts wake rounds asked for by changes at least a second
		// apart (changeGap in app): a block right after the round
		// that resolved the last one would wait for the gap. Measure a
		// block that meets the router at rest, as a change that comes
		// alone does.
		if alert != nil {
			if _, err := w.alice.WaitFor(ctx, waitReply, inThreadOf(w.j, w.room, alert.ID, "no longer needs attention")); err != nil {
				b.Fatalf("no all-clear for block %d: %v", i-1, err)
			}
		}
		time.Sleep(wakeRoundGap)
		note := fmt.Sprintf("waiting on the vendor, round %06d", i)
		b.StartTimer()
		start := time.Now()
		setState("blocked", note)
		var err error
		alert, err = w.alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
			body := tesths.Body(evt)
			return tesths.MessageFrom(w.room, w.j.UserID)(evt) && strings.Contains(body, "Needs attention: a card is blocked") &&
				strings.Contains(body, note)
		})
		if err != nil {
			b.Fatalf("no wake notice for block %d: %v", i, err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	reportLatencies(b, "", durations)
}
