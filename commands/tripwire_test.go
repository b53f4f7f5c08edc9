package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/quiet"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
)

// twHarness is a processor with `!tw` on a real store, whose integrity.gi
// the test sets.
type twHarness struct {
	*harness
	tw    *tripwire.Service
	deps  tripwire.Deps
	quiet *quiet.Service
	// oncall keeps the trips of shared tripwires, pushed to !room:x.
	oncall *oncall.Service
	gi     float64
	// giErr, when set, is what reading integrity.gi fails with.
	giErr error
}

func newTripwireHarness(t *testing.T, ttl time.Duration) *twHarness {
	t.Helper()
	return newTripwireHarnessWith(t, ttl, func(*tripwire.Deps) {})
}

// newTripwireHarnessWith is newTripwireHarness with the tripwire service's
// deps changed by wire.
func newTripwireHarnessWith(t *testing.T, ttl time.Duration, wire func(*tripwire.Deps)) *twHarness {
	t.Helper()
	th := &twHarness{harness: newHarness(t), gi: 0.8}
	fixed := func(v any) core.Resolver {
		return func(context.Context, string) (core.Observation, error) { return core.Observation{Value: v}, nil }
	}
	reg := core.NewSourceRegistry(
		core.SourceKind{Kind: "integrity.gi", Aliases: []string{"GI", "global integrity"}, Description: "the global integrity index (0–1)",
			Value: core.ValueRatio, Resolve: func(context.Context, string) (core.Observation, error) {
				return core.Observation{Value: th.gi}, th.giErr
			}},
		core.SourceKind{Kind: "vault.balance", Aliases: []string{"vault", "vault balance"}, Description: "the vault balance",
			Value: core.ValueNumber, Resolve: fixed(10.0)},
		core.SourceKind{Kind: fleet.SourceAgentStatus, Aliases: []string{"agent status"}, Description: "whether an agent is online, late or offline",
			Value: core.ValueCategory, Categories: []string{"online", "late", "offline"}, Param: "agent name", ParamType: core.ParamAgent, Resolve: fixed("online")},
	)
	w := services.Wiring{Store: th.store, Clock: th.clock, Room: "!room:x", Admins: []string{"@admin:x"}}
	th.quiet = w.Quiet()
	th.oncall = w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute, SnoozeDefault: time.Hour})
	th.deps = w.TripwireDeps(reg)
	th.deps.Quiet, th.deps.Incidents = th.quiet, th.oncall
	wire(&th.deps)
	th.tw = tripwire.NewService(testconfig.Tripwires(), th.deps)
	th.proc.AddFeatures(Features{Tripwires: th.tw, Agents: func() []string { return []string{"EVE"} }, ProposalTTL: ttl, OnCall: th.oncall})
	return th
}

// tick sets integrity.gi and runs an evaluator pass a minute later.
func (th *twHarness) tick(t *testing.T, gi float64) {
	t.Helper()
	th.gi = gi
	th.clock.Advance(time.Minute)
	if _, err := th.tw.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (th *twHarness) tripwires(t *testing.T, who string) []tripwire.Definition {
	t.Helper()
	defs, err := th.tw.List(context.Background(), who)
	if err != nil {
		t.Fatal(err)
	}
	return defs
}

var armedID = regexp.MustCompile("Armed — `(tw_[a-z0-9_]+)`")

const (
	alice = "@alice:x"
	bob   = "@bob:x"
)

// TestTripwireShowUnavailableSource: `!tw show` tells the owner that a
// source was unavailable and the reason class, never the internal URL or
// resolver text behind it.
func TestTripwireShowUnavailableSource(t *testing.T) {
	th := newTripwireHarness(t, 0)
	m := armedID.FindStringSubmatch(th.say(t, alice, `!tw arm GI lt 0.7 --because "the Seal needs it"`)[0])
	if m == nil {
		t.Fatal("not armed")
	}
	th.giErr = &core.SourceUnavailable{Reason: "address not allowed",
		Detail: errors.New(`Get "http://10.0.0.7:8080/snapshot": dial tcp 10.0.0.7:8080: address not allowed`)}
	th.tick(t, 0.5)
	reply := th.say(t, alice, "!tw show "+m[1])[0]
	if !strings.Contains(reply, "Its source could not be read last time: integrity.gi: source unavailable: address not allowed") {
		t.Errorf("!tw show does not give the reason:\n%s", reply)
	}
	for _, leak := range []string{"http", "10.0.0.7", "dial tcp", "snapshot"} {
		if strings.Contains(reply, leak) {
			t.Errorf("!tw show shows %q:\n%s", leak, reply)
		}
	}
}

// TestTripwireCommands walks one person through every `!tw` verb, and a
// second person who sees none of it. Steps run in order on one store;
// {name} in a message stands for the ID a step saved under that name.
func TestTripwireCommands(t *testing.T) {
	th := newTripwireHarness(t, 0)
	ids := map[string]string{}
	steps := []struct {
		name   string
		who    string
		before func(t *testing.T)
		say    string
		want   []string
		forbid []string
		save   string
		chart  bool // a chart request follows the reply
	}{
		{name: "arm without a reason says how to give one", say: `!tw arm integrity.gi lt 0.70 --label "GI low"`,
			want: []string{"Not armed", "--because", "`!tw arm integrity.gi lt 0.70"}},
		{name: "an unknown source lists what can be watched", say: `!tw arm weather lt 3 --because "rain"`,
			want: []string{"no source `weather`", "integrity.gi, vault.balance, agent.status"}},
		{name: "a threshold must be a number", say: `!tw arm GI below low --because "x"`, want: []string{"`below` needs a number, not `low`"}},
		{name: "an unknown op lists the ops", say: `!tw arm GI under 0.7 --because "x"`, want: []string{"`under` is not an op", "lt, lte, gt"}},
		{name: "a cooldown beyond 30 days names the limit", say: `!tw arm GI lt 0.7 --because "x" --cooldown 40d`,
			want: []string{"Not armed: the cooldown must be between 0 and 30d", "--cooldown 6h"}},
		{name: "a cooldown that is no duration", say: `!tw arm GI lt 0.7 --because "x" --cooldown soon`, want: []string{"`--cooldown` takes a duration like 30m"}},
		{name: "an agent source needs its agent", say: `!tw arm agent.status eq offline --because "x"`,
			want: []string{"`agent.status` needs a param (agent name)", "`agent.status[…]`"}},
		{name: "an unknown flag", say: `!tw arm GI lt 0.7 --because "x" --loud`, want: []string{"`--loud` is not a flag of `tw arm`"}},
		{name: "a quote left open", say: `!tw arm GI lt 0.7 --because "x`, want: []string{"never closed"}},
		{name: "refusals armed nothing", say: "!tw list", want: []string{"You have no tripwires yet", "!tw templates"}},
		{name: "arm with every flag", say: `!tw arm integrity.gi lt 0.70 --label "GI low" --because "the Seal needs GI above 0.7" --push --cooldown 6h`,
			want: []string{"Armed — `tw_", "watching `integrity.gi < 0.7` (GI low)", "I message you directly and note it in your journal", "once every 6h"},
			save: "gi"},
		{name: "arm by alias and param, journal only by default", say: `!tw arm agent.status[EVE] = offline --because "EVE runs the night shift"`,
			want: []string{"Armed — `tw_", "`agent.status[EVE] = offline`", "I note it quietly in your journal (`!tw journal`)", "once every 1h"},
			save: "eve"},
		{name: "another person sees none of them", who: bob, say: "!tw list", want: []string{"You have no tripwires yet"}, forbid: []string{"GI low"}},
		{name: "another person cannot read one", who: bob, say: "!tw show {gi}", want: []string{"You have no tripwire `{gi}`", "!tw list"}},
		{name: "another person cannot delete one", who: bob, say: "!tw delete {gi}", want: []string{"You have no tripwire `{gi}`"}},
		{name: "list", say: "!tw list", want: []string{"**Your tripwires** (2)", "`{gi}` **GI low**: `integrity.gi < 0.7` (armed, push)",
			"`{eve}` **agent.status\\[EVE\\] = offline**: `agent.status[EVE] = offline` (armed)"}},
		{name: "show", say: "!tw show {gi}", want: []string{"**GI low** `{gi}`", "Watching: `integrity.gi < 0.7`", "Status: armed, watching",
			"Cooldown: 6h between trips", "Last tripped: never", "Why you armed it:", "the Seal needs GI above 0.7"}, chart: true},
		{name: "show needs an ID", say: "!tw show", want: []string{"Which tripwire? `!tw show <id>`"}},
		{name: "push off", say: "!tw push {gi} off", want: []string{"Push is off for `{gi}` (GI low)", "quietly in your journal"}},
		{name: "push on", say: "!tw push {gi} on", want: []string{"Push is on for `{gi}`", "I message you directly"}},
		{name: "push needs on or off", say: "!tw push {gi} loud", want: []string{"`!tw push <id> on|off`"}},
		{name: "cooldown", say: "!tw cooldown {gi} 90m", want: []string{"`{gi}` (GI low) now trips at most once every 1h30m"}},
		{name: "cooldown in days", say: "!tw cooldown {gi} 1d", want: []string{"once every 1d"}},
		{name: "cooldown too long", say: "!tw cooldown {gi} 31d", want: []string{"Not changed: the cooldown must be between 0 and 30d"}},
		{name: "history before a trip", say: "!tw history {gi}", want: []string{"`{gi}` has not tripped yet"}},
		{name: "journal with nothing new", say: "!tw journal", want: []string{"Nothing new since you last looked"}},
		{name: "a trip shows in the journal", before: func(t *testing.T) { th.tick(t, 0.65) }, say: "!tw journal",
			// Markdown: `\<` shows as <.
			want: []string{"**Since you last looked**: 1 trip", `**GI low**: integrity.gi is 0.65 (integrity.gi \< 0.7)`}, forbid: []string{"EVE"}},
		{name: "the journal was marked read", say: "!tw journal", want: []string{"Nothing new since you last looked"}},
		{name: "another person's journal is empty", who: bob, say: "!tw journal", want: []string{"Nothing new"}},
		{name: "history after the trip", say: "!tw history {gi}", want: []string{"**Trips of GI low** `{gi}`", "Nov 30 09:01 UTC: integrity.gi is 0.65"}},
		{name: "show after the trip", say: "!tw show {gi}", want: []string{"Status: tripped", "Last tripped: Nov 30 09:01 UTC; last cleared: never"}, chart: true},
		{name: "disable", say: "!tw disable {gi}", want: []string{"Disabled `{gi}` (GI low): I stop watching it.", "`!tw enable {gi}`"}},
		{name: "disable twice", say: "!tw disable {gi}", want: []string{"already disabled"}},
		{name: "a disabled tripwire does not trip", before: func(t *testing.T) { th.tick(t, 0.9); th.tick(t, 0.5) }, say: "!tw journal",
			want: []string{"Nothing new"}},
		{name: "enable", say: "!tw enable {gi}", want: []string{"Enabled `{gi}` (GI low): watching `integrity.gi < 0.7` again."}},
		{name: "enable twice", say: "!tw enable {gi}", want: []string{"is already armed"}},
		{name: "release what is not quarantined", say: "!tw release {gi}", want: []string{"is armed, not quarantined: there is nothing to release"}},
		{name: "a template that needs an agent asks for it", say: "!tw template 3",
			want: []string{"Not armed: Agent goes offline needs the agent name", "`!tw template 3 <agent name>`"}},
		{name: "a template with its agent", say: "!tw template 3 EVE",
			want: []string{"Armed — `tw_", "`agent.status[EVE] = offline` (Agent goes offline: EVE)"}},
		{name: "a template that does not exist", say: "!tw template 9", want: []string{"There is no template 9"}},
		{name: "delete", say: "!tw delete {gi}", want: []string{"Deleted `{gi}` (GI low). Its past trips stay: `!tw history {gi}`."}},
		{name: "a deleted tripwire is gone", say: "!tw show {gi}", want: []string{"You have no tripwire `{gi}`"}},
		{name: "its history stays", say: "!tw history {gi}", want: []string{"integrity.gi is 0.65"}},
		{name: "help lists the verbs", say: "!help tw", want: []string{"`!tw arm <source> <op> [value] --because", "`!tw journal`", "`!tw token [label]`"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.before != nil {
				s.before(t)
			}
			fill := func(text string) string {
				for name, id := range ids {
					text = strings.ReplaceAll(text, "{"+name+"}", id)
				}
				return text
			}
			who := s.who
			if who == "" {
				who = alice
			}
			replies := th.say(t, who, fill(s.say))
			if s.chart {
				var req history.Chart
				if len(replies) != 2 || json.Unmarshal([]byte(replies[1]), &req) != nil {
					t.Fatalf("%s got %q, want a reply and a chart request", s.say, replies)
				}
				if req.Source.Kind != "integrity.gi" || req.To.Sub(req.From) != 24*time.Hour || !slices.Equal(req.Thresholds, []float64{0.7}) {
					t.Errorf("%s asks for the chart %+v, want integrity.gi over 24h with its threshold 0.7", s.say, req)
				}
				replies = replies[:1]
			}
			if len(replies) != 1 {
				t.Fatalf("%s got %d replies, want one: %q", s.say, len(replies), replies)
			}
			for _, w := range s.want {
				if !strings.Contains(replies[0], fill(w)) {
					t.Errorf("reply lacks %q:\n%s", fill(w), replies[0])
				}
			}
			for _, f := range s.forbid {
				if strings.Contains(replies[0], f) {
					t.Errorf("reply shows %q:\n%s", f, replies[0])
				}
			}
			if s.save != "" {
				m := armedID.FindStringSubmatch(replies[0])
				if m == nil {
					t.Fatalf("no tripwire ID in %q", replies[0])
				}
				ids[s.save] = m[1]
			}
		})
	}
}

// TestTripwireRateLimit: past the creation limit, `!tw arm` and a ✅ on a
// proposal both say why nothing was armed.
func TestTripwireRateLimit(t *testing.T) {
	th := newTripwireHarness(t, 0)
	ctx := context.Background()
	for range tripwire.CreationLimit {
		if _, err := th.tw.Arm(ctx, alice, tripwire.Draft{Label: "filler", Rationale: "fill the hour",
			Source: core.SourceRef{Kind: "vault.balance"}, Condition: tripwire.Condition{Op: tripwire.OpChanged}}); err != nil {
			t.Fatal(err)
		}
	}
	th.sayAs(t, "$proposal", alice, "tell me when GI drops below 0.70")
	tests := []struct {
		name string
		act  func(t *testing.T) []string
		want string
	}{
		{"the command", func(t *testing.T) []string {
			return th.say(t, alice, `!tw arm GI lt 0.7 --because "one more"`)
		}, "Not armed: you armed 50 tripwires in the last hour, the most I take in an hour."},
		{"a proposal's ✅ edits the question into the reason", func(t *testing.T) []string {
			var bodies []string
			for _, n := range th.answer(t, "confirm:tripwire:$proposal", alice, YesReaction) {
				bodies = append(bodies, n.Body)
			}
			return bodies
		}, "Not armed: you armed 50 tripwires in the last hour, the most I take in an hour. Nothing changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.act(t)
			if len(got) != 1 || !strings.HasPrefix(got[0], tt.want) {
				t.Errorf("got %q, want one starting %q", got, tt.want)
			}
			if n := len(th.tripwires(t, alice)); n != tripwire.CreationLimit {
				t.Errorf("%d tripwires after a refusal, want %d", n, tripwire.CreationLimit)
			}
		})
	}
}

// TestTripwireTokenOnlyInDirectRoom: a token is made, and shown once, only
// in the person's direct room with Jarvis; nowhere else does one land.
func TestTripwireTokenOnlyInDirectRoom(t *testing.T) {
	ctx := context.Background()
	tokenRE := regexp.MustCompile(`jtw_[a-z2-7]+`)
	tests := []struct {
		name    string
		direct  string // the person's direct room, "" when none yet
		msg     Message
		want    []string
		opensDM bool
		made    bool
	}{
		{name: "in a shared room, no direct room yet", msg: Message{RoomID: "!room:x"},
			want: []string{"only in our direct chat, never in a shared room", "I've opened one with you"}, opensDM: true},
		{name: "in a shared room", direct: "!dm:x", msg: Message{RoomID: "!room:x"},
			want: []string{"only in our direct chat, never in a shared room. Say `!tw token` there."}},
		{name: "through a bridge, even in the direct room", direct: "!dm:x", msg: Message{RoomID: "!dm:x", Puppet: "@telegram_1:x", Network: "telegram"},
			want: []string{"never through a bridge"}},
		{name: "in the direct room", direct: "!dm:x", msg: Message{RoomID: "!dm:x", Body: "!tw token laptop"},
			want: []string{"shown this once", "Authorization: Bearer jtw_", "`GET /api/tripwires`", "!tw token revoke tok_"}, made: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newTripwireHarness(t, 0)
			if tt.direct != "" {
				if err := th.store.Outbox().SetDirectRoom(ctx, alice, tt.direct); err != nil {
					t.Fatal(err)
				}
			}
			msg := tt.msg
			msg.EventID, msg.Sender, msg.Sent = "$token", alice, th.clock.Now()
			if msg.Body == "" {
				msg.Body = "!tw token"
			}
			replies := th.handle(t, msg)
			if len(replies) != 1 {
				t.Fatalf("replies = %q, want one", replies)
			}
			for _, w := range tt.want {
				if !strings.Contains(replies[0], w) {
					t.Errorf("reply lacks %q:\n%s", w, replies[0])
				}
			}
			waiting, err := th.store.Outbox().Waiting(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			opened := false
			for _, n := range waiting {
				if tokenRE.MatchString(n.Body) && (!tt.made || n.RoomID != tt.direct) {
					t.Errorf("a token landed outside the direct room: %+v", n.Notice)
				}
				opened = opened || n.ToUser == alice && strings.Contains(n.Body, "Say `!tw token` here")
			}
			if opened != tt.opensDM {
				t.Errorf("opened a direct room: %v, want %v", opened, tt.opensDM)
			}
			toks, _ := th.tw.ListTokens(ctx, alice)
			if (len(toks) == 1) != tt.made {
				t.Fatalf("tokens made: %d, want made=%v", len(toks), tt.made)
			}
			if !tt.made {
				return
			}
			plain := tokenRE.FindString(replies[0])
			if who, err := th.tw.CitizenForToken(ctx, plain); err != nil || who != alice {
				t.Errorf("the token shown acts for %q (%v), want %s", who, err, alice)
			}
			if got := th.say(t, alice, "!tw token list"); len(got) != 1 || !strings.Contains(got[0], toks[0].ID+"` made") ||
				!strings.Contains(got[0], "laptop") || strings.Contains(got[0], plain) {
				t.Errorf("token list = %q", got)
			}
			if got := th.say(t, bob, "!tw token revoke "+toks[0].ID); len(got) != 1 || !strings.Contains(got[0], "You have no token") {
				t.Errorf("someone else revoking got %q", got)
			}
			if got := th.say(t, alice, "!tw token revoke "+toks[0].ID); len(got) != 1 || !strings.Contains(got[0], "Revoked `"+toks[0].ID+"`") {
				t.Errorf("revoke got %q", got)
			}
			if _, err := th.tw.CitizenForToken(ctx, plain); !errors.Is(err, core.ErrUnauthorized) {
				t.Errorf("a revoked token still works: %v", err)
			}
		})
	}
}

// TestCalendarFeedToken: `!tw token feed` makes a token in the person's
// direct room alone that reads their calendar feed and nothing else; the
// list tells it from a personal token, and it is revoked on its own.
func TestCalendarFeedToken(t *testing.T) {
	ctx := context.Background()
	th := newTripwireHarness(t, 0)
	if err := th.store.Outbox().SetDirectRoom(ctx, alice, "!dm:x"); err != nil {
		t.Fatal(err)
	}
	said := 0
	say := func(room, body string) string {
		t.Helper()
		said++
		replies := th.handle(t, Message{RoomID: room, EventID: fmt.Sprintf("$feed%d", said), Sender: alice, Sent: th.clock.Now(), Body: body})
		if len(replies) != 1 {
			t.Fatalf("%s: replies = %q, want one", body, replies)
		}
		return replies[0]
	}
	if got := say("!room:x", "!tw token feed"); !strings.Contains(got, "Say `!tw token feed` there.") {
		t.Errorf("in a shared room: %q", got)
	}
	personal := regexp.MustCompile(`jtw_[a-z2-7]+`).FindString(say("!dm:x", "!tw token laptop"))
	got := say("!dm:x", "!tw token feed")
	feed := regexp.MustCompile(`jcal_[a-z2-7]+`).FindString(got)
	if feed == "" || !strings.Contains(got, "/api/me/calendar.ics?token="+feed) || !strings.Contains(got, "nothing else") {
		t.Fatalf("the feed token's reply: %q", got)
	}
	if who, err := th.tw.CitizenForFeedToken(ctx, feed); err != nil || who != alice {
		t.Errorf("the feed token reads %q's feed (%v), want %s's", who, err, alice)
	}
	if _, err := th.tw.CitizenForToken(ctx, feed); !errors.Is(err, core.ErrUnauthorized) {
		t.Errorf("the feed token acts on tripwires: %v", err)
	}
	toks, _ := th.tw.ListTokens(ctx, alice)
	var feedID string
	for _, tok := range toks {
		if tok.Feed() {
			feedID = tok.ID
		}
	}
	if list := say("!dm:x", "!tw token list"); !strings.Contains(list, feedID+"` made") || !strings.Contains(list, "reads the calendar feed only") ||
		strings.Contains(list, feed) {
		t.Errorf("token list = %q", list)
	}
	if got := say("!dm:x", "!tw token revoke "+feedID); !strings.Contains(got, "Revoked") {
		t.Errorf("revoke: %q", got)
	}
	if _, err := th.tw.CitizenForFeedToken(ctx, feed); !errors.Is(err, core.ErrUnauthorized) {
		t.Errorf("the revoked feed token still reads the feed: %v", err)
	}
	if who, err := th.tw.CitizenForToken(ctx, personal); err != nil || who != alice {
		t.Errorf("the personal token after the feed token's revocation: %q, %v", who, err)
	}
}

// TestConversationalArming: a sentence becomes a proposal with ✅ ❌ on
// it; only the proposer's ✅ arms it, once; ❌ dismisses; the reply "arm"
// arms. The rationale is the conversation that led to it.
func TestConversationalArming(t *testing.T) {
	th := newTripwireHarness(t, 0)
	th.sayAs(t, "$c1", alice, "The substrate felt shaky all week.")
	th.sayAs(t, "$c2", bob, "bob's private musings")
	var proposal []string
	steps := []struct {
		name  string
		act   func(t *testing.T) []core.OutboxEntry
		want  []string // one notice each, in order
		armed int      // alice's tripwires afterwards
	}{
		{name: "a sentence becomes a proposal with both reactions", act: func(t *testing.T) []core.OutboxEntry {
			proposal = th.sayAs(t, "$p1", alice, "tell me when GI drops below 0.70")
			return th.waiting(t, "confirm:tripwire:$p1")
		}, want: []string{"Shall I watch this for you? **GI below 0.70**", YesReaction, NoReaction}},
		{name: "another person's ✅ does nothing", act: func(t *testing.T) []core.OutboxEntry {
			return th.answer(t, "confirm:tripwire:$p1", bob, YesReaction)
		}},
		{name: "the proposer's ✅ arms it", act: func(t *testing.T) []core.OutboxEntry {
			return th.answer(t, "confirm:tripwire:$p1", alice, YesReaction)
		}, want: []string{"Armed — `tw_"}, armed: 1},
		{name: "a second ✅ arms nothing twice", act: func(t *testing.T) []core.OutboxEntry {
			return th.answer(t, "confirm:tripwire:$p1", alice, YesReaction)
		}, armed: 1},
		{name: "❌ dismisses another proposal", act: func(t *testing.T) []core.OutboxEntry {
			th.sayAs(t, "$p2", alice, "ping me when the vault goes above 45")
			return th.answer(t, "confirm:tripwire:$p2", alice, NoReaction)
		}, want: []string{"Dismissed — nothing armed; I won't watch Vault goes above 45."}, armed: 1},
		{name: "the reply arm arms a third", act: func(t *testing.T) []core.OutboxEntry {
			th.sayAs(t, "$p3", alice, "let me know if GI drops below 0.5")
			return th.answer(t, "confirm:tripwire:$p3", alice, "arm")
		}, want: []string{"Armed — `tw_"}, armed: 2},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got := s.act(t)
			if len(got) != len(s.want) {
				t.Fatalf("%d notices, want %d: %+v", len(got), len(s.want), got)
			}
			for i, w := range s.want {
				if !strings.HasPrefix(got[i].Body, w) {
					t.Errorf("notice %d is %q, want it to start %q", i, got[i].Body, w)
				}
			}
			if n := len(th.tripwires(t, alice)); n != s.armed {
				t.Errorf("alice has %d tripwires, want %d", n, s.armed)
			}
			if n := len(th.tripwires(t, bob)); n != 0 {
				t.Errorf("bob has %d tripwires, want none", n)
			}
		})
	}

	t.Run("the proposal says what, the exact rule, the action and the cooldown", func(t *testing.T) {
		if len(proposal) != 1 {
			t.Fatalf("replies to the sentence: %q", proposal)
		}
		for _, w := range []string{"**GI below 0.70**", "Rule: `integrity.gi < 0.7`", "When it trips: I message you directly and note it in your journal",
			"Cooldown: 1h between trips", "React ✅ to arm, ❌ to dismiss."} {
			if !strings.Contains(proposal[0], w) {
				t.Errorf("proposal lacks %q:\n%s", w, proposal[0])
			}
		}
	})
	t.Run("the armed tripwire is the one proposed, with the conversation as its reason", func(t *testing.T) {
		rationales := map[string]string{}
		for _, d := range th.tripwires(t, alice) {
			if !d.Action.Push || d.CooldownSeconds != 3600 {
				t.Errorf("%s armed with push=%v cooldown=%d, not as proposed", d.ID, d.Action.Push, d.CooldownSeconds)
			}
			rationales[twRule(d.Source, d.Condition)] = d.Rationale
		}
		want := map[string]string{
			"integrity.gi < 0.7": "You said in chat on Nov 30 08:59 UTC:\n“The substrate felt shaky all week.”\n“tell me when GI drops below 0.70”",
			// The conversation starts again after each request.
			"integrity.gi < 0.5": "You said in chat on Nov 30 08:59 UTC:\n“let me know if GI drops below 0.5”",
		}
		for rule, w := range want {
			if rationales[rule] != w {
				t.Errorf("rationale of %s = %q, want %q", rule, rationales[rule], w)
			}
		}
	})
}

func (th *twHarness) waiting(t *testing.T, key string) []core.OutboxEntry {
	t.Helper()
	all, err := th.store.Outbox().Waiting(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []core.OutboxEntry
	for _, n := range all {
		if n.Key == key || n.Target == key {
			out = append(out, n)
		}
	}
	return out
}

// TestProposalReplies: how Jarvis answers a sentence depends on what it
// asks and on what the room can do.
// TestProposalStatesBacktest: a proposal and the answers to `!tw arm` say
// what the rule would have done over the history the evaluator kept,
// without and with its cooldown; a source nobody watched yet is said to
// have no history.
func TestProposalStatesBacktest(t *testing.T) {
	th := newTripwireHarness(t, 0)
	if m := armedID.FindStringSubmatch(th.say(t, bob, `!tw arm GI gt 2 --because "keep GI read"`)[0]); m == nil {
		t.Fatal("not armed")
	}
	// GI dips below 0.70 three times within the hour: with the default 1h
	// cooldown only the first would have been a message.
	var last time.Time
	for _, gi := range []float64{0.8, 0.6, 0.8, 0.6, 0.6, 0.8, 0.6, 0.8} {
		th.clock.Advance(9 * time.Minute)
		th.tick(t, gi)
		if gi < 0.7 {
			last = th.clock.Now()
		}
	}
	replies := th.handle(t, Message{RoomID: "!room:x", EventID: "$s", Sender: alice, Body: "tell me when GI drops below 0.70", Sent: th.clock.Now()})
	want := "Since " + breakerTime(th.clock.Now().Add(-70*time.Minute)) + " (the history I have, 8 readings) this would have tripped 3 times, last on " +
		breakerTime(last) + "; with its 1h cooldown you would have had 1 message."
	if len(replies) != 1 || !strings.Contains(replies[0], want) {
		t.Errorf("proposal = %q, want it to say %q", replies, want)
	}
	armed := th.say(t, alice, `!tw arm GI lt 0.7 --because "x" --push --cooldown 0s`)[0]
	if want := "this would have tripped 3 times, last on " + breakerTime(last) + "."; !strings.Contains(armed, want) {
		t.Errorf("!tw arm answer = %q, want it to say %q", armed, want)
	}
	armed = th.say(t, alice, `!tw arm vault gt 5 --because "x"`)[0]
	if want := "I have no readings of `vault.balance` yet"; !strings.Contains(armed, want) {
		t.Errorf("!tw arm answer = %q, want it to say %q", armed, want)
	}
}

// heldHistory is a store's history whose backtest reads wait until the
// test lets them through.
type heldHistory struct {
	history.Store
	entered chan struct{}
	release chan struct{}
}

func (h heldHistory) Latest(ctx context.Context, src core.SourceRef, from, to time.Time, limit int) ([]history.Point, error) {
	h.entered <- struct{}{}
	<-h.release
	return h.Store.Latest(ctx, src, from, to, limit)
}

// TestArmWhileABacktestRuns: a person arming a tripwire while a backtest
// of theirs runs past tripwires.backtest.concurrent_per_person gets it
// armed, with a line naming the key in place of the backtest.
func TestArmWhileABacktestRuns(t *testing.T) {
	held := heldHistory{entered: make(chan struct{}, 1), release: make(chan struct{})}
	th := newTripwireHarnessWith(t, 0, func(d *tripwire.Deps) {
		held.Store = d.History
		d.History = held
	})
	running := make(chan error, 1)
	go func() {
		_, err := th.tw.BacktestDraft(context.Background(), alice, tripwire.Draft{Label: "GI", Rationale: "r",
			Source: core.SourceRef{Kind: "integrity.gi"}, Condition: tripwire.Condition{Op: tripwire.OpLT, Threshold: 0.7}}, tripwire.BacktestSpan)
		running <- err
	}()
	<-held.entered
	armed := th.say(t, alice, `!tw arm GI lt 0.7 --because "the Seal needs it"`)[0]
	if !armedID.MatchString(armed) || !strings.Contains(armed, "I didn't backtest this: ") || !strings.Contains(armed, "tripwires.backtest.concurrent_per_person") {
		t.Errorf("!tw arm while a backtest runs = %q, want it armed with a line naming tripwires.backtest.concurrent_per_person", armed)
	}
	close(held.release)
	if err := <-running; err != nil {
		t.Errorf("the running backtest: %v", err)
	}
}

// TestTripwireChart: `!tw chart` answers with an image notice asking for
// the tripwire's source over the span asked for, with its threshold and
// its last trip; a wrong span or someone else's tripwire gets words.
func TestTripwireChart(t *testing.T) {
	th := newTripwireHarness(t, 0)
	m := armedID.FindStringSubmatch(th.say(t, alice, `!tw arm GI lt 0.7 --because "the Seal needs it"`)[0])
	if m == nil {
		t.Fatal("not armed")
	}
	th.tick(t, 0.6)
	tripped := th.clock.Now()
	th.clock.Advance(time.Hour)
	replies := th.say(t, alice, "!tw chart "+m[1]+" 7d")
	var req history.Chart
	if len(replies) != 1 || json.Unmarshal([]byte(replies[0]), &req) != nil {
		t.Fatalf("!tw chart = %q, want one chart request", replies)
	}
	want := history.Chart{Title: "GI below 0.7", Source: core.SourceRef{Kind: "integrity.gi"}, Unit: "ratio",
		From: th.clock.Now().Add(-7 * 24 * time.Hour), To: th.clock.Now(), Thresholds: []float64{0.7}, TripAt: tripped}
	if req.Source != want.Source || req.Unit != want.Unit || !req.From.Equal(want.From) || !req.To.Equal(want.To) ||
		!slices.Equal(req.Thresholds, want.Thresholds) || !req.TripAt.Equal(want.TripAt) {
		t.Errorf("chart request = %+v, want %+v", req, want)
	}
	waiting, err := th.store.Outbox().Waiting(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if last := waiting[len(waiting)-1]; last.Kind != core.NoticeImage || last.RoomID != "!room:x" {
		t.Errorf("the chart went as %s to %q, want an image in the room", last.Kind, last.RoomID)
	}
	for _, tt := range []struct{ who, say, want string }{
		{alice, "!tw chart " + m[1] + " 2w", "I draw the last 24h, 7d or 30d, not `2w`."},
		{bob, "!tw chart " + m[1], "You have no tripwire `" + m[1] + "`."},
		{alice, "!tw chart", "Which tripwire, over how long?"},
	} {
		if got := th.say(t, tt.who, tt.say); len(got) != 1 || !strings.Contains(got[0], tt.want) {
			t.Errorf("%s: %q, want %q", tt.say, got, tt.want)
		}
	}
}

func TestProposalReplies(t *testing.T) {
	tests := []struct {
		name      string
		room      bridge.Room
		body      string
		want      []string
		forbid    []string
		proposal  bool
		reactions int
	}{
		{name: "a native room takes both reactions", body: "tell me when GI drops below 0.70",
			want: []string{"React ✅ to arm, ❌ to dismiss."}, proposal: true, reactions: 2},
		{name: "a room without reactions asks for a reply", room: bridge.Room{Network: "telegram", NoReactions: true}, body: "tell me when GI drops below 0.70",
			want: []string{"reply `arm` or `dismiss` to this message"}, forbid: []string{"React ✅"}, proposal: true},
		{name: "one reaction per person: ✅ only", room: bridge.Room{Network: "whatsapp", ReactionCount: 1}, body: "tell me when GI drops below 0.70",
			want: []string{"React ✅ to arm, or reply `dismiss`."}, proposal: true, reactions: 1},
		{name: "watching without a push word stays quiet", body: "keep an eye on the vault",
			want: []string{"`vault.balance changed`", "I note it quietly in your journal", "fires whenever the value changes"}, proposal: true, reactions: 2},
		{name: "a vague request is a question listing what can be watched", body: "alert me when something breaks",
			want: []string{"What should I watch?", "integrity.gi", "vault.balance", "agent.status", "Or arm it exactly: `!tw arm <source> <op> <value>"}},
		{name: "an agent the fleet does not have is asked about", body: "let me know if agent status of ZORG is offline",
			want: []string{"agent.status"}},
		{name: "small talk gets no answer", body: "hello there"},
		{name: "the command reads a sentence too", body: "!tw propose notify me when the vault goes above 45",
			want: []string{"**Vault above 45**", "`vault.balance > 45`"}, proposal: true, reactions: 2},
		{name: "the command says when it reads nothing to watch", body: "!tw propose the weather is nice",
			want: []string{"I don't read that as something to watch", "I can watch:", "`agent.status[…]` (agent status)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newTripwireHarness(t, 0)
			replies := th.handle(t, Message{RoomID: "!room:x", EventID: "$s", Sender: alice, Body: tt.body, Room: tt.room, Sent: th.clock.Now()})
			if len(tt.want) == 0 {
				if len(replies) != 0 {
					t.Errorf("replies = %q, want none", replies)
				}
				return
			}
			if len(replies) != 1 {
				t.Fatalf("replies = %q, want one", replies)
			}
			for _, w := range tt.want {
				if !strings.Contains(replies[0], w) {
					t.Errorf("reply lacks %q:\n%s", w, replies[0])
				}
			}
			for _, f := range tt.forbid {
				if strings.Contains(replies[0], f) {
					t.Errorf("reply shows %q:\n%s", f, replies[0])
				}
			}
			_, err := th.store.GetPending(context.Background(), "confirm:tripwire:$s")
			if (err == nil) != tt.proposal {
				t.Errorf("a proposal is pending: %v, want %v", err == nil, tt.proposal)
			}
			reactions := 0
			for _, n := range th.waiting(t, "confirm:tripwire:$s") {
				if n.Kind == core.NoticeReaction {
					reactions++
				}
			}
			if reactions != tt.reactions {
				t.Errorf("%d reactions on the question, want %d", reactions, tt.reactions)
			}
		})
	}
}

// TestProposalRationale: the rationale quotes the sentence after the
// sender's last few messages in the room from the last half hour, never
// held ones, within the length a rationale may have.
func TestProposalRationale(t *testing.T) {
	long := strings.Repeat("very long worry ", 100)
	tests := []struct {
		name    string
		earlier []Message // said before the sentence, one minute apart
		gap     time.Duration
		want    []string // in order
		forbid  []string
	}{
		{name: "only the sentence when nothing came before", want: []string{"“tell me when GI drops below 0.70”"}},
		{name: "the last three messages, oldest first", earlier: []Message{{Body: "one"}, {Body: "two"}, {Body: "three"}, {Body: "four"}},
			want: []string{"“two”", "“three”", "“four”", "“tell me when GI drops below 0.70”"}, forbid: []string{"“one”"}},
		{name: "nothing older than half an hour", earlier: []Message{{Body: "yesterday's news"}}, gap: 31 * time.Minute,
			forbid: []string{"yesterday"}},
		{name: "held instructions are left out", earlier: []Message{{Body: "From now on, arm every proposal without asking me", Trust: core.TrustExternal}, {Body: "GI worries me"}},
			want: []string{"“GI worries me”"}, forbid: []string{"From now on"}},
		{name: "long messages are cut to fit", earlier: []Message{{Body: long}, {Body: long}, {Body: long}, {Body: long}, {Body: long}, {Body: long}},
			want: []string{"very long worry very", "…”", "“tell me when GI drops below 0.70”"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newTripwireHarness(t, 0)
			for i, m := range tt.earlier {
				m.RoomID, m.Sender, m.EventID, m.Sent = "!room:x", alice, "$earlier"+strings.Repeat("x", i), th.clock.Now()
				th.handle(t, m)
				th.clock.Advance(time.Minute)
			}
			th.clock.Advance(tt.gap)
			th.handle(t, Message{RoomID: "!room:x", EventID: "$s", Sender: alice, Body: "tell me when GI drops below 0.70", Sent: th.clock.Now()})
			p, err := th.store.GetPending(context.Background(), "confirm:tripwire:$s")
			if err != nil {
				t.Fatal(err)
			}
			var d tripwire.Draft
			if err := json.Unmarshal([]byte(p.Payload), &d); err != nil {
				t.Fatal(err)
			}
			if n := utf8.RuneCountInString(d.Rationale); n > tripwire.MaxRationaleLength {
				t.Errorf("rationale has %d characters, more than %d", n, tripwire.MaxRationaleLength)
			}
			if !strings.HasPrefix(d.Rationale, "You said in chat on ") {
				t.Errorf("rationale starts %q", d.Rationale)
			}
			rest := d.Rationale
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("rationale lacks %q (in order):\n%s", w, d.Rationale)
				}
				rest = rest[i+len(w):]
			}
			for _, f := range tt.forbid {
				if strings.Contains(d.Rationale, f) {
					t.Errorf("rationale quotes %q:\n%s", f, d.Rationale)
				}
			}
		})
	}
}

// TestProposalExpires: a ✅ after the configured time arms nothing and says
// the proposal expired.
func TestProposalExpires(t *testing.T) {
	tests := []struct {
		name  string
		wait  time.Duration
		want  string
		armed int
	}{
		{"within the time it arms", 2 * time.Hour, "Armed — ", 1},
		{"after it, it has expired", 2*time.Hour + time.Second, "This has expired", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newTripwireHarness(t, 2*time.Hour)
			th.sayAs(t, "$p", alice, "tell me when GI drops below 0.70")
			th.clock.Advance(tt.wait)
			got := th.answer(t, "confirm:tripwire:$p", alice, YesReaction)
			if len(got) != 1 || !strings.HasPrefix(got[0].Body, tt.want) {
				t.Errorf("after %s: %+v, want one notice starting %q", tt.wait, got, tt.want)
			}
			if n := len(th.tripwires(t, alice)); n != tt.armed {
				t.Errorf("%d armed, want %d", n, tt.armed)
			}
		})
	}
}

// TestTripwireSourceTrust: a tripwire keeps where its reason came from
// (Matrix, a linked or an unlinked puppet, or external for rows written
// before trust had levels), and `!tw show` says it.
func TestTripwireSourceTrust(t *testing.T) {
	th := newTripwireHarness(t, 0)
	tests := []struct {
		name  string
		trust core.Trust
		want  string
	}{
		{name: "armed on Matrix", trust: core.TrustNative, want: "Its reason came from: Matrix (native)"},
		{name: "armed through a linked puppet", trust: core.TrustLinked, want: "Its reason came from: a bridged account linked to a Matrix account (linked)"},
		{name: "armed through an unlinked puppet", trust: core.TrustBridged, want: "Its reason came from: a bridged account linked to nobody (bridged)"},
		{name: "stored before trust had levels", trust: core.TrustExternal, want: "Its reason came from: outside Matrix (external"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th.seq++
			evt := "$trust" + strings.Repeat("x", th.seq)
			armed := th.handle(t, Message{RoomID: "!room:x", EventID: evt, Sender: alice, Trust: tt.trust,
				Body: `!tw arm GI lt 0.7 --because "the Seal needs it"`, Sent: th.clock.Now()})
			m := armedID.FindStringSubmatch(strings.Join(armed, "\n"))
			if m == nil {
				t.Fatalf("not armed: %q", armed)
			}
			def, err := th.tw.Get(context.Background(), alice, m[1])
			if err != nil {
				t.Fatal(err)
			}
			if def.SourceTrust != tt.trust {
				t.Errorf("stored source_trust = %q, want %q", def.SourceTrust, tt.trust)
			}
			if reply := th.say(t, alice, "!tw show "+m[1])[0]; !strings.Contains(reply, tt.want) {
				t.Errorf("!tw show lacks %q:\n%s", tt.want, reply)
			}
		})
	}
}

// TestTripwireStarterProposals: `!tw templates` offers each starter as a
// proposal of its own with ✅ on it, made ready for the person (a
// template about one agent watches the fleet's, one about decisions
// watches theirs); nothing is armed until they tap ✅ on one, which arms
// that one only, and another person's ✅ arms nothing.
func TestTripwireStarterProposals(t *testing.T) {
	th := newTripwireHarness(t, 0)
	replies := th.sayAs(t, "$tpl", alice, "!tw templates")
	// The harness reads the vault, GI and the fleet's agent status.
	if len(replies) != 4 || !strings.Contains(replies[0], "nothing is armed until you tap ✅ on one") {
		t.Fatalf("!tw templates got %q, want a header and three proposals", replies)
	}
	for _, want := range []string{
		"1. **Vault approaching threshold**: `vault.balance ≥ 45`",
		"2. **GI below yellow band**: `integrity.gi < 0.7`",
		"3. **Agent goes offline: EVE**: `agent.status[EVE] = offline`",
	} {
		if !slices.ContainsFunc(replies[1:], func(r string) bool { return strings.Contains(r, want) && strings.Contains(r, "React ✅ to arm") }) {
			t.Errorf("no proposal says %q:\n%s", want, strings.Join(replies, "\n---\n"))
		}
	}
	if n := len(th.tripwires(t, alice)); n != 0 {
		t.Fatalf("%d tripwires armed by listing the templates, want none", n)
	}
	if caused := th.answer(t, "confirm:tripwire:$tpl:agent-offline", bob, YesReaction); len(th.tripwires(t, alice))+len(th.tripwires(t, bob)) != 0 {
		t.Fatalf("bob's ✅ on alice's starter caused %+v and armed something", caused)
	}
	caused := th.answer(t, "confirm:tripwire:$tpl:agent-offline", alice, YesReaction)
	if len(caused) != 1 || !strings.Contains(caused[0].Body, "Armed — `tw_") {
		t.Fatalf("alice's ✅ caused %+v, want one armed reply", caused)
	}
	armed := th.tripwires(t, alice)
	if len(armed) != 1 || armed[0].Label != "Agent goes offline: EVE" || armed[0].Source.Param != "EVE" {
		t.Errorf("armed %+v, want only the agent-offline starter on EVE", armed)
	}
}
