package console

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestSession follows one console user through the outbox: it shows what
// is said to them, the room's halts and relays and the operator's trip
// pushes, once each, and nothing of other people's; a question becomes
// the prompt and y its answer; reopened, it shows what came meanwhile,
// marked. The relay acts on a typed line as the lease holder would.
func TestSession(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, store.SQLite)
	o := st.Outbox()
	clock := coretest.NewClock(time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC))
	proc := commands.NewProcessor(commands.Config{Prefix: "!"},
		commands.Deps{Tx: st, Outbox: o, Handled: st, Notices: o, Pending: st, Excerpts: st, Clock: clock})
	relay := NewRelay(RelayDeps{Inputs: st, Outbox: o, Processor: proc, Clock: clock})
	enqueue := func(notices ...core.Notice) {
		t.Helper()
		for _, n := range notices {
			if err := o.Enqueue(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	enqueue(core.Notice{Key: "breaker:old", RoomID: "!room:x", Kind: core.NoticeMessage, Body: "an old halt"})
	var out bytes.Buffer
	deps := Deps{Store: st, Notices: o, Clock: clock, Describe: func(_ context.Context, request string) (string, error) {
		return "Chart of " + request + ", **lowest** 0.62", nil
	}}
	s := NewSession(Config{User: "alice", Operator: "@op:x"}, deps, &out)
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("a first console showed the past:\n%s", out.String())
	}

	if _, err := s.Submit(ctx, "!ping"); err != nil {
		t.Fatal(err)
	}
	if err := relay.Round(ctx); err != nil {
		t.Fatal(err)
	}
	enqueue(
		core.Notice{Key: "breaker:brk_1", RoomID: "!room:x", Kind: core.NoticeMessage, Body: "🛑 **HALTED**: EVE"},
		core.Notice{Key: "breaker:brk_1:react:review", RoomID: "!room:x", Kind: core.NoticeReaction, Target: "breaker:brk_1", Body: "👀"},
		core.Notice{Key: "trip:tw_1:1", ToUser: "@op:x", Kind: core.NoticeMessage, Body: "Tripwire tripped: GI low"},
		core.Notice{Key: "trip:tw_2:1", ToUser: "@bob:x", Kind: core.NoticeMessage, Body: "Bob's trip"},
		core.Notice{Key: "reply:console:in:99:1", RoomID: "console:bob", Kind: core.NoticeMessage, Body: "Bob's answer"},
		core.Notice{Key: "reply:$ev:1", RoomID: "!room:x", Kind: core.NoticeMessage, Body: "an answer to someone in the room"},
		core.Notice{Key: "trip:tw_1:1:chart", ToUser: "@op:x", Kind: core.NoticeImage, Target: "trip:tw_1:1", Thread: true, Body: "integrity.gi"},
	)
	for range 2 {
		if err := s.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	screen := out.String()
	for _, want := range []string{"pong", "HALTED: EVE", "Tripwire tripped: GI low", "↳ 📈 Chart of integrity.gi, **lowest** 0.62"} {
		if strings.Count(screen, want) != 1 {
			t.Errorf("the console showed %q %d times, want once:\n%s", want, strings.Count(screen, want), screen)
		}
	}
	for _, not := range []string{"Bob's", "an answer to someone", "👀", "an old halt"} {
		if strings.Contains(screen, not) {
			t.Errorf("the console showed %q:\n%s", not, screen)
		}
	}
	// Bob's answer came from elsewhere than this round: the relay's
	// periodic delivery marks it.
	if _, err := o.DeliverConsole(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if depth, _ := o.Depth(ctx); depth != 7 {
		t.Errorf("outbox depth %d, want the 7 Matrix notices (the console's are delivered)", depth)
	}

	enqueue(core.Notice{Key: "confirm:wipe:console:in:7", RoomID: Me("alice"), Kind: core.NoticeMessage, Body: "Wipe it?"})
	if err := s.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Prompt(); got != "Confirm? [y/N] › " {
		t.Fatalf("prompt %q after a question", got)
	}
	seq, err := s.Submit(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	in, err := st.Input(ctx, seq)
	if err != nil || in.Answers != "confirm:wipe:console:in:7" || in.Body != "yes" {
		t.Fatalf("the answer went as %+v, %v", in, err)
	}
	if got := s.Prompt(); got != "jarvis › " {
		t.Errorf("prompt %q once answered", got)
	}

	out.Reset()
	enqueue(core.Notice{Key: "decision:card_1:q_1", RoomID: "!room:x", Kind: core.NoticeMessage, Body: "Which store?\n\n1. SQLite\n2. Postgres"})
	again := NewSession(Config{User: "alice"}, deps, &out)
	if err := again.Open(ctx); err != nil {
		t.Fatal(err)
	}
	screen = out.String()
	if !strings.Contains(screen, "While the console was closed: 1 notice") || !strings.Contains(screen, "Which store?") ||
		!strings.Contains(screen, "Up to now") || strings.Contains(screen, "HALTED") {
		t.Errorf("reopened, the console shows:\n%s", screen)
	}
	if got := again.Prompt(); got != "Option number (Enter leaves it open) › " {
		t.Errorf("prompt %q after a relayed question", got)
	}
	if seq, err := again.Submit(ctx, ""); err != nil || seq != 0 {
		t.Errorf("Enter on an option question handed over %d (%v), want nothing", seq, err)
	}
}

// TestRelayLeaseLost: a relay whose process lost the workspace lease acts
// on nothing, and leaves the line waiting for the Jarvis that holds it.
func TestRelayLeaseLost(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC))
	proc := commands.NewProcessor(commands.Config{Prefix: "!"}, commands.Deps{Tx: st, Outbox: st.Outbox(),
		Handled: st, Notices: st.Outbox(), Pending: st, Excerpts: st, Clock: clock})
	relay := NewRelay(RelayDeps{Inputs: st, Outbox: st.Outbox(), Processor: proc, Clock: clock})
	seq, err := st.AddInput(ctx, core.Input{User: "alice", Body: "!ping", At: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	st.SetFence(func(context.Context) error { return core.ErrStaleEpoch })
	if err := relay.Round(ctx); err == nil {
		t.Fatal("a relay without the lease acted on a line")
	}
	if in, err := st.Input(ctx, seq); err != nil || !in.Handled.IsZero() {
		t.Fatalf("the line after a round without the lease: %+v, %v; want it waiting", in, err)
	}
	st.SetFence(nil)
	if err := relay.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if in, err := st.Input(ctx, seq); err != nil || in.Outcome != string(commands.Answered) {
		t.Fatalf("the line once the lease is back: %+v, %v; want it answered", in, err)
	}
}

// TestSessionCommitOrder: a halt whose transaction commits after a later
// notice's is still shown, once, and so is the later one. On PostgreSQL a
// notice's seq is drawn when it is written, not when it commits, and a
// console that followed seqs passed over the slower halt for good; on
// SQLite the second writer waits for the first.
func TestSessionCommitOrder(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			st := testdb.OpenStore(t, engine)
			o := st.Outbox()
			var out bytes.Buffer
			s := NewSession(Config{User: "alice"}, Deps{Store: st, Notices: o, Clock: coretest.NewClock(time.Now())}, &out)
			if err := s.Open(ctx); err != nil {
				t.Fatal(err)
			}
			halt := func(ctx context.Context, name string) error {
				return o.Enqueue(ctx, core.Notice{Key: "breaker:" + name, RoomID: "!room:x", Kind: core.NoticeMessage, Body: "HALTED: " + name})
			}
			slowWrote, release, slowDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				slowDone <- st.InTx(ctx, func(ctx context.Context) error {
					if err := halt(ctx, "SLOW"); err != nil {
						return err
					}
					close(slowWrote)
					<-release
					return nil
				})
			}()
			<-slowWrote
			fastDone := make(chan error, 1)
			go func() { fastDone <- halt(ctx, "FAST") }()
			if engine == store.Postgres {
				// The later halt commits while the first one's
				// transaction is still open.
				if err := <-fastDone; err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				if err := s.Poll(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if strings.Contains(out.String(), "SLOW") {
				t.Fatalf("the console showed a halt not yet committed:\n%s", out.String())
			}
			close(release)
			if err := <-slowDone; err != nil {
				t.Fatal(err)
			}
			if engine != store.Postgres {
				if err := <-fastDone; err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				if err := s.Poll(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for _, want := range []string{"HALTED: SLOW", "HALTED: FAST"} {
				if n := strings.Count(out.String(), want); n != 1 {
					t.Errorf("the console showed %q %d times, want once:\n%s", want, n, out.String())
				}
			}
		})
	}
}
