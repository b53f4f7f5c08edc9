// Package workload drives a running Jarvis the way a busy workspace does,
// over its real interfaces: agents heartbeating and journaling over the
// authenticated HTTP API, an orchestrator publishing card sets, a
// supervisor opening breakers that an admin resumes in chat, and people
// chatting and tapping through the homeserver. What each client says is
// drawn from one seed, so a run can be replayed; what Jarvis acknowledged
// is recorded, so that a checker can verify afterwards that it was kept.
//
// The workload expects Jarvis to come and go (a fault matrix kills it): a
// request that fails or is refused is counted and the client carries on.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/client"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// Pace is how often a client acts: Off never, Max as soon as its last
// request was answered, a positive duration once per that long.
type Pace time.Duration

// The paces that are no interval.
const (
	Off Pace = 0
	Max Pace = -1
)

// Every is the pace of once per d.
func Every(d time.Duration) Pace { return Pace(d) }

// Config is one workload. Zero paces leave a part out.
type Config struct {
	// Seed draws everything the clients say. Journal entry IDs and card
	// set keys come from it, so two workloads on one Jarvis need two
	// seeds (one seed again replays the same requests).
	Seed uint64
	// API is the base URL of Jarvis's HTTP API, http://host:port.
	API    string
	Tokens Tokens
	// Agents heartbeat, each from a client of its own, at Heartbeats.
	Agents     []string
	Heartbeats Pace
	// JournalEvery makes every JournalEvery-th heartbeat of an agent
	// followed by a journal entry; 0 writes none.
	JournalEvery int
	// CycleEvery starts an agent's next cycle every CycleEvery heartbeats
	// (each cycle is a heartbeat row of its own); 0 keeps the first.
	CycleEvery int
	// CardSets is how often the orchestrator publishes a card set of one
	// to three P3 cards.
	CardSets Pace
	// Breakers is how often the supervisor opens the breaker of one of
	// Agents, which Admin then resumes in Room and the supervisor
	// verifies; it needs Admin.
	Breakers Pace

	// Room is Jarvis's dedicated room and Jarvis the bot's user.
	Room   id.RoomID
	Jarvis id.UserID
	// People chat in Room at Chat, each waiting for Jarvis's answer
	// before going on: mostly !ping, and now and then a sentence that
	// Jarvis proposes a tripwire for, which they dismiss with ❌. They
	// must have joined Room and be able to talk there.
	People []*tesths.Person
	Chat   Pace
	// Admin is one of bot.admins, in Room, who resumes breakers.
	Admin *tesths.Person
	// Timeout bounds each request and each wait for an answer in the
	// room; 0 is 30 s.
	Timeout time.Duration
}

// Workload is a running workload.
type Workload struct {
	cfg    Config
	http   *http.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup
	start  time.Time

	mu  sync.Mutex
	rec Record

	// clients are the API clients by token.
	clientsMu sync.Mutex
	clients   map[string]*client.Client
}

// Start checks cfg and starts every client; Stop ends them.
func Start(cfg Config) (*Workload, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	switch {
	case cfg.API == "" && (cfg.Heartbeats != Off || cfg.CardSets != Off || cfg.Breakers != Off):
		return nil, errors.New("workload: the API's address is needed")
	case cfg.Breakers != Off && (cfg.Admin == nil || len(cfg.Agents) == 0):
		return nil, errors.New("workload: breakers need an admin and agents")
	case (cfg.Chat != Off && len(cfg.People) > 0 || cfg.Breakers != Off) && (cfg.Room == "" || cfg.Jarvis == ""):
		return nil, errors.New("workload: chat needs the room and Jarvis's user")
	}
	for _, a := range cfg.Agents {
		if cfg.Tokens.Agents[a] == "" {
			return nil, fmt.Errorf("workload: no token for agent %s", a)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Workload{cfg: cfg, cancel: cancel, start: time.Now(), rec: newRecord(), clients: map[string]*client.Client{},
		http: &http.Client{Timeout: cfg.Timeout, Transport: &http.Transport{
			MaxIdleConns: len(cfg.Agents) + 8, MaxIdleConnsPerHost: len(cfg.Agents) + 8, IdleConnTimeout: 30 * time.Second}}}
	stream := uint64(0)
	next := func() *rand.Rand { stream++; return rand.New(rand.NewPCG(cfg.Seed, stream)) }
	if cfg.Heartbeats != Off {
		for _, a := range cfg.Agents {
			w.goRun(ctx, cfg.Heartbeats, next(), (&agent{w: w, name: a}).step)
		}
	}
	if cfg.CardSets != Off {
		w.goRun(ctx, cfg.CardSets, next(), w.publishCardSet)
	}
	if cfg.Breakers != Off {
		w.goRun(ctx, cfg.Breakers, next(), w.cycleBreaker)
	}
	if cfg.Chat != Off {
		for _, p := range cfg.People {
			w.goRun(ctx, cfg.Chat, next(), (&chatter{w: w, p: p}).step)
		}
	}
	return w, nil
}

// goRun runs step at pace until ctx ends. A client at an interval starts
// at a random point within its first one, so that clients of one pace do
// not act in step.
func (w *Workload) goRun(ctx context.Context, pace Pace, rng *rand.Rand, step func(context.Context, *rand.Rand)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		every := time.Duration(pace)
		next := time.Now()
		if every > 0 {
			next = next.Add(rand.N(every))
		}
		for {
			if every > 0 {
				if !sleepUntil(ctx, next) {
					return
				}
				next = next.Add(every)
				if now := time.Now(); next.Before(now) {
					// A step that took longer than the interval is not
					// caught up with a burst.
					next = now
				}
			}
			if ctx.Err() != nil {
				return
			}
			step(ctx, rng)
		}
	}()
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// Stop ends every client, waits until each has returned, and gives what
// Jarvis acknowledged. A request cut off by Stop counts as failed.
func (w *Workload) Stop() Record {
	w.cancel()
	w.wg.Wait()
	w.http.CloseIdleConnections()
	return w.Snapshot()
}

// Snapshot gives what Jarvis acknowledged so far.
func (w *Workload) Snapshot() Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := w.rec.clone()
	rec.Elapsed = time.Since(w.start)
	return rec
}

// record changes the record under the lock.
func (w *Workload) record(fn func(r *Record)) {
	w.mu.Lock()
	fn(&w.rec)
	w.mu.Unlock()
}
