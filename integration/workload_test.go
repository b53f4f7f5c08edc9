package integration

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/internal/testkit/workload"
	"github.com/jarvis-hmi/jarvis/store"
)

// workloadRate is the requests a second, per token, that a Jarvis under a
// workload takes (api.rate_limit.credential.per_second; a tenth of it at
// once): the workload's agents report as fast as they are answered.
const workloadRate = 20000

// loadSetup is a Jarvis made ready for a workload.
type loadSetup struct {
	// Agents is how many agents the fleet lists (wl000, …), each with a
	// token; Cadence is theirs (1h when zero).
	Agents  int
	Cadence time.Duration
	// Tripwires are seeded before Jarvis starts; their Agents, Server and
	// Owner (the admin) are filled in.
	Tripwires workload.Tripwires
	// Store is the database; empty is a fresh SQLite file.
	Store store.Config
	// Profiling serves the Go profiles beside /metrics (api.profiling).
	Profiling bool
	// DefaultRate keeps api.rate_limit.credential at its default, for a
	// workload at a workspace's pace rather than as fast as it is answered.
	DefaultRate bool
	// Extra is more configuration, as options.extra.
	Extra string
	// HS is the homeserver; nil means the package's.
	HS *tesths.Homeserver
	// ListenAll has the API listen on every address of this machine, so
	// that a load generator in a network namespace of its own reaches it
	// over its link; l.api stays on loopback.
	ListenAll bool
}

// loaded is a running Jarvis with what a workload needs to drive it: its
// API's address and tokens, its store (a second writer, for seeding and
// checking), and an admin in its dedicated room.
type loaded struct {
	j      *jarvis
	st     *store.Store
	api    string
	agents []string
	tokens workload.Tokens
	admin  *tesths.Person
	room   id.RoomID
}

// newLoaded seeds a database as s says, starts Jarvis on it with the API
// on, and joins an admin to its room.
func newLoaded(t testing.TB, s loadSetup) *loaded {
	t.Helper()
	ctx := context.Background()
	if s.Store.Type == "" {
		s.Store = testdb.NewConfig(t, store.SQLite)
	}
	if s.Cadence == 0 {
		s.Cadence = time.Hour
	}
	l := &loaded{st: testdb.OpenConfig(t, s.Store), agents: workload.AgentNames(s.Agents)}
	var err error
	if l.tokens, err = workload.IssueTokens(ctx, l.st, l.agents); err != nil {
		t.Fatal(err)
	}
	if s.HS == nil {
		s.HS = hs
	}
	l.admin = newPersonOn(t, s.HS, "admin")
	s.Tripwires.Agents, s.Tripwires.Server, s.Tripwires.Owner = l.agents, "localhost", l.admin.UserID.String()
	if err := workload.SeedTripwires(ctx, l.st, s.Tripwires); err != nil {
		t.Fatal(err)
	}
	addr := cardAPIListen(t)
	l.api = "http://" + addr
	// The workload drives each agent's token as fast as Jarvis answers
	// it, far past api.rate_limit.credential's default: it sets its own.
	listen := addr
	if s.ListenAll {
		_, port, _ := net.SplitHostPort(addr)
		listen = net.JoinHostPort("0.0.0.0", port)
	}
	extra := fmt.Sprintf("api:\n  listen: %s\n  metrics_token: %s\n  profiling: %t\n", listen, metricsToken, s.Profiling)
	if !s.DefaultRate {
		extra += fmt.Sprintf("  rate_limit:\n    credential: {per_second: %d, burst: %d}\n", workloadRate, workloadRate/10)
	}
	if s.Agents > 0 {
		extra += workload.FleetYAML(l.agents, s.Cadence)
	}
	l.j = newJarvis(t, options{admins: []id.UserID{l.admin.UserID}, store: s.Store, extra: extra + s.Extra, hs: s.HS})
	l.room = l.j.joinRoom(t, l.admin)
	cardAPI{t: t, base: l.api}.waitUp()
	return l
}

// config is a workload on l with every client at pace Off: the caller
// sets the paces it wants.
func (l *loaded) config(seed uint64) workload.Config {
	return workload.Config{Seed: seed, API: l.api, Tokens: l.tokens, Agents: l.agents,
		Room: l.room, Jarvis: l.j.UserID, Admin: l.admin}
}

// TestWorkload runs every part of the workload for a few seconds against
// the real binary and checks that what Jarvis acknowledged is in its
// store: the heartbeats of each agent's cycles, the journal entries, the
// card sets with all their cards, and the breakers it opened, resumed and
// closed; and that every message had its answer in the room.
func TestWorkload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLoaded(t, loadSetup{Agents: 4, Tripwires: workload.Tripwires{Count: 2000, Scopes: 200, TripEvery: 100}})
	cfg := l.config(17)
	cfg.Heartbeats, cfg.JournalEvery, cfg.CycleEvery = workload.Every(50*time.Millisecond), 5, 20
	cfg.CardSets = workload.Every(250 * time.Millisecond)
	cfg.Breakers = workload.Every(2 * time.Second)
	cfg.People, cfg.Chat = []*tesths.Person{l.admin}, workload.Every(200*time.Millisecond)
	w, err := workload.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// It runs until it has done enough of everything to check (at least
	// 6 s), however long a loaded machine takes to answer.
	enough := func(r workload.Record) bool {
		return r.HeartbeatCount() >= 100 && len(r.Journal) >= 10 && len(r.CardSets) >= 10 && len(r.Chat) >= 5 && len(r.Breakers) >= 2
	}
	started := time.Now()
	for time.Since(started) < 6*time.Second || !enough(w.Snapshot()) && time.Since(started) < time.Minute {
		time.Sleep(100 * time.Millisecond)
	}
	rec := w.Stop()
	t.Logf("in %s: %d heartbeats, %d journal entries, %d card sets, %d breakers, %d of %d messages answered; refused %v, failed %v",
		rec.Elapsed.Round(time.Millisecond), rec.HeartbeatCount(), len(rec.Journal), len(rec.CardSets), len(rec.Breakers),
		rec.Answered(), len(rec.Chat), rec.Refused, rec.Failed)

	if len(rec.Failed) > 0 {
		t.Errorf("requests without an answer: %v", rec.Failed)
	}
	for route, n := range rec.Refused {
		// A journal entry of an agent whose breaker the workload opened
		// is refused, since an open breaker halts its agent until a person
		// reviews and resumes it; nothing else is.
		if route != "POST /api/agents/journal 423" {
			t.Errorf("%d refused: %s", n, route)
		}
	}
	if rec.HeartbeatCount() < 100 || len(rec.Journal) < 10 || len(rec.CardSets) < 10 || len(rec.Chat) < 5 {
		t.Errorf("too little acknowledged: %d heartbeats, %d journal entries, %d card sets, %d messages",
			rec.HeartbeatCount(), len(rec.Journal), len(rec.CardSets), len(rec.Chat))
	}
	for _, ex := range rec.Chat {
		if ex.Answer == "" {
			t.Errorf("%q (%s) got no answer", ex.Text, ex.Sent)
		}
	}
	hbs := l.st.Heartbeats()
	for k, ack := range rec.Heartbeats {
		if ack.Count == 0 {
			continue
		}
		hb, err := hbs.Heartbeat(ctx, k.Agent, k.Cycle)
		if err != nil {
			t.Errorf("heartbeat of %s %s: %v", k.Agent, k.Cycle, err)
			continue
		}
		if ack.UnansweredSince == 0 && (!hb.Timestamp.Equal(ack.Last) || hb.MII != ack.MII) || hb.Timestamp.Before(ack.Last) {
			t.Errorf("%s %s is stored as sent at %s with MII %v, the last acknowledged at %s with %v",
				k.Agent, k.Cycle, hb.Timestamp, hb.MII, ack.Last, ack.MII)
		}
	}
	journal := l.st.AgentJournal()
	stored := map[string]bool{}
	for _, e := range rec.Journal {
		if _, seen := stored[e.Agent+" "+e.Cycle]; !seen {
			entries, err := journal.JournalEntries(ctx, e.Agent, e.Cycle)
			if err != nil {
				t.Fatal(err)
			}
			stored[e.Agent+" "+e.Cycle] = true
			for _, s := range entries {
				stored[s.EntryID] = true
			}
		}
		if !stored[e.EntryID] {
			t.Errorf("journal entry %s is not stored", e.EntryID)
		}
	}
	cards := l.st.Cards()
	for _, set := range rec.CardSets {
		got, err := cards.CardSetByKey(ctx, set.Key)
		if err != nil || got.ID != set.SetID {
			t.Errorf("card set %s: %+v, %v; want %s", set.Key, got, err, set.SetID)
			continue
		}
		in, err := cards.CardsOfSet(ctx, set.SetID)
		if err != nil || len(in) != len(set.Cards) {
			t.Errorf("card set %s holds %d cards (%v), want %d", set.SetID, len(in), err, len(set.Cards))
		}
	}
	// The cycle that Stop cut off may have got anywhere; every other one
	// went round: opened, resumed in the room and closed by verification.
	for i, b := range rec.Breakers {
		if !b.Verified && i != len(rec.Breakers)-1 {
			t.Errorf("breaker cycle %d of %d did not go round: %+v", i+1, len(rec.Breakers), b)
		}
	}
	if len(rec.Breakers) < 2 {
		t.Errorf("%d breaker cycles in %s, want at least 2", len(rec.Breakers), rec.Elapsed.Round(time.Second))
	}
}
