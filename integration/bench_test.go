package integration

import (
	"context"
	"sort"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/tesths"
)

// BenchmarkRoundTrip measures a chat round trip through the real
// homeserver: a person sends !ping and sees the answer. "jarvis" is the
// real binary; "echo-floor" is a bare mautrix client that answers every
// message at once, the floor any bot on this homeserver can reach. Run
// with -benchtime 200x for the figures in the README.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("jarvis", func(b *testing.B) {
		alice := newPerson(b, "alice")
		j := newJarvis(b, options{admins: []id.UserID{alice.UserID}})
		room := j.joinRoom(b, alice)
		measureRoundTrips(b, alice, room, j.replyTo)
	})
	b.Run("echo-floor", func(b *testing.B) {
		ctx := context.Background()
		alice := newPerson(b, "alice")
		echo := startEcho(b)
		created, err := alice.CreateRoom(ctx, &mautrix.ReqCreateRoom{Invite: []id.UserID{echo.UserID}, Preset: "private_chat"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := echo.WaitFor(ctx, 20*time.Second, func(evt *event.Event) bool {
			return evt.RoomID == created.RoomID && evt.Type == event.StateMember && evt.GetStateKey() == echo.UserID.String() &&
				evt.Content.AsMember().Membership == event.MembershipJoin
		}); err != nil {
			b.Fatal(err)
		}
		measureRoundTrips(b, alice, created.RoomID, func(sent id.EventID) func(*event.Event) bool {
			return func(evt *event.Event) bool {
				if evt.Type != event.EventMessage || evt.Sender != echo.UserID {
					return false
				}
				msg := evt.Content.AsMessage()
				return msg.RelatesTo != nil && msg.RelatesTo.GetReplyTo() == sent
			}
		})
	})
}

func measureRoundTrips(b *testing.B, p *tesths.Person, room id.RoomID, replyTo func(id.EventID) func(*event.Event) bool) {
	ctx := context.Background()
	// One warm-up round trip outside the measurement.
	warm, err := p.Say(ctx, room, "!ping")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.WaitFor(ctx, 20*time.Second, replyTo(warm)); err != nil {
		b.Fatal(err)
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
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
	b.StopTimer()
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	pct := func(q float64) float64 {
		return float64(durations[min(len(durations)-1, int(q*float64(len(durations))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// startEcho registers a bare mautrix client that joins when invited and
// answers every message with a reply carrying the same text.
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
		_, _ = cli.SendMessageEvent(ctx, evt.RoomID, event.EventMessage, content)
	})
	return p
}
