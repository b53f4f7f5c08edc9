package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/tesths"
)

// BenchmarkRoundTrip measures a chat round trip through the real
// homeserver: a person sends !ping and sees the answer. "jarvis" is the
// real binary; "echo-floor" is a bare mautrix client with the same crypto
// as Jarvis (cryptohelper) that answers every message at once, the floor
// any bot on this homeserver can reach. Both run in an encrypted room
// (Jarvis's default) and in a plaintext one, so that each pair compares
// like with like; every answer must arrive encrypted, or in the clear, as
// its room is. make bench runs 200 round trips each.
func BenchmarkRoundTrip(b *testing.B) {
	for _, kind := range []struct {
		name      string
		encrypted bool
	}{{"encrypted", true}, {"plaintext", false}} {
		b.Run(kind.name, func(b *testing.B) {
			b.Run("jarvis", func(b *testing.B) {
				alice := newPerson(b, "alice")
				// One person sends every round trip as fast as Jarvis answers:
				// far past a person's sender limit, which is not what is measured.
				j := newJarvis(b, options{admins: []id.UserID{alice.UserID}, plaintext: !kind.encrypted,
					extra: "chat:\n  sender_limit:\n    per_second: 1000\n    burst: 1000\n"})
				room := j.joinRoom(b, alice)
				if kind.encrypted {
					waitEncrypted(b, room, alice)
				}
				measureRoundTrips(b, alice, room, func(sent id.EventID) func(*event.Event) bool {
					reply := j.replyTo(sent)
					return func(evt *event.Event) bool { return tesths.Encrypted(evt) == kind.encrypted && reply(evt) }
				})
			})
			b.Run("echo-floor", func(b *testing.B) {
				ctx := context.Background()
				alice := newPerson(b, "alice")
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
				measureRoundTrips(b, alice, created.RoomID, func(sent id.EventID) func(*event.Event) bool {
					return func(evt *event.Event) bool {
						if evt.Type != event.EventMessage || evt.Sender != echo.UserID || tesths.Encrypted(evt) != kind.encrypted {
							return false
						}
						msg := evt.Content.AsMessage()
						return msg.RelatesTo != nil && msg.RelatesTo.GetReplyTo() == sent
					}
				})
			})
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

func measureRoundTrips(b *testing.B, p *tesths.Person, room id.RoomID, replyTo func(id.EventID) func(*event.Event) bool) {
	// One warm-up round trip outside the measurement.
	roundTrips(b, p, room, 1, replyTo)
	b.ResetTimer()
	durations := roundTrips(b, p, room, b.N, replyTo)
	b.StopTimer()
	reportLatencies(b, "", durations)
}

// roundTrips has p say !ping in room n times, each after the answer to
// the last, and returns how long each answer took.
func roundTrips(b *testing.B, p *tesths.Person, room id.RoomID, n int, replyTo func(id.EventID) func(*event.Event) bool) []time.Duration {
	ctx := context.Background()
	durations := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		sent, err := p.Say(ctx, room, "!ping")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.WaitFor(ctx, 20*time.Second, replyTo(sent)); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	return durations
}

// reportLatencies reports the median and the tail of durations, as
// p50-ms, p95-ms and p99-ms after prefix.
func reportLatencies(b *testing.B, prefix string, durations []time.Duration) {
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.50}, {"p95", 0.95}, {"p99", 0.99}} {
		b.ReportMetric(float64(quantile(durations, q.q).Microseconds())/1000, prefix+q.name+"-ms")
	}
}

// quantile is the q-quantile of durations (nearest rank), which it sorts.
func quantile(durations []time.Duration, q float64) time.Duration {
	slices.Sort(durations)
	return durations[min(len(durations)-1, int(q*float64(len(durations))))]
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

// BenchmarkWakeRouter measures the wake router end to end: a worker blocks
// a ratified card over the API, and the person who ratified it sees the
// router's notice in the room. Each operation is one such notice (the
// worker unblocks the card between them, outside the measurement); make
// bench runs 100.
func BenchmarkWakeRouter(b *testing.B) {
	ctx := context.Background()
	w := newWakeSetup(b)
	setState := func(state, note string) {
		w.api.call(http.MethodPost, "/api/cards/"+w.card+"/state", nil, map[string]any{"state": state, "note": note}, http.StatusOK, nil)
	}
	setState("claimed", "working")
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		setState("in_progress", "working")
		note := fmt.Sprintf("waiting on the vendor, round %06d", i)
		b.StartTimer()
		start := time.Now()
		setState("blocked", note)
		if _, err := w.alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
			body := tesths.Body(evt)
			return tesths.MessageFrom(w.room, w.j.UserID)(evt) && strings.Contains(body, "Needs attention: a card is blocked") &&
				strings.Contains(body, note)
		}); err != nil {
			b.Fatalf("no wake notice for block %d: %v", i, err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	reportLatencies(b, "", durations)
}
