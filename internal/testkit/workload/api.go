package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/client"
)

// outcome is what became of a request.
type outcome int

const (
	// acked: answered with the status wanted.
	acked outcome = iota
	// refused: answered with another status, which changes nothing.
	refused
	// unanswered: no answer; the request may or may not have been done.
	unanswered
)

// client is the API client of token, made once and kept.
func (w *Workload) client(token string) *client.Client {
	w.clientsMu.Lock()
	defer w.clientsMu.Unlock()
	c, ok := w.clients[token]
	if !ok {
		c = client.New(w.cfg.API, token)
		c.HTTP = w.http
		w.clients[token] = c
	}
	return c
}

// outcomeOf says what became of a client call: a refusal is counted under
// route and its status, a request without an answer under route (unless
// the workload is stopping).
func (w *Workload) outcomeOf(ctx context.Context, method, route string, err error) outcome {
	label := method + " " + route
	var p *client.Problem
	switch {
	case err == nil:
		return acked
	case errors.As(err, &p):
		w.record(func(r *Record) { r.Refused[fmt.Sprintf("%s %d", label, p.Status)]++ })
		return refused
	case ctx.Err() == nil:
		w.record(func(r *Record) { r.Failed[label]++ })
	}
	return unanswered
}

// agent is one agent's client: it heartbeats, and journals every
// JournalEvery-th time.
type agent struct {
	w    *Workload
	name string
	n    int
}

func (a *agent) step(ctx context.Context, rng *rand.Rand) {
	w := a.w
	a.n++
	cycle := "C-1"
	if w.cfg.CycleEvery > 0 {
		cycle = fmt.Sprintf("C-%d", 1+a.n/w.cfg.CycleEvery)
	}
	c := w.client(w.cfg.Tokens.Agents[a.name])
	mii := miiLow + rng.Float64()*(miiHigh-miiLow)
	mii = float64(int(mii*1000)) / 1000
	at := time.Now().UTC().Truncate(time.Second)
	_, err := c.Heartbeat(ctx, client.Heartbeat{Cycle: cycle, Timestamp: at, MII: &mii, Mode: "green",
		Notes: fmt.Sprintf("workload heartbeat %d", a.n)})
	got := w.outcomeOf(ctx, http.MethodPost, "/api/agents/heartbeat", err)
	w.record(func(r *Record) {
		k := AgentCycle{a.name, cycle}
		hbs := r.Heartbeats[k]
		switch {
		case got == acked:
			hbs.Count, hbs.Last, hbs.MII = hbs.Count+1, at, mii
			hbs.UnansweredSince = 0
		case got == unanswered:
			hbs.UnansweredSince++
		default:
			return
		}
		r.Heartbeats[k] = hbs
	})
	if w.cfg.JournalEvery == 0 || a.n%w.cfg.JournalEvery != 0 {
		return
	}
	entry := fmt.Sprintf("%s-%s-s%d-%06d", a.name, cycle, w.cfg.Seed, a.n)
	content := fmt.Sprintf("Workload entry %d of %s: %s", a.n, a.name, words(rng, 12))
	err = c.Journal(ctx, client.JournalEntry{Cycle: cycle, EntryID: entry, Title: "Workload entry " + entry, Content: content,
		SignalWeight: float64(rng.IntN(11)) / 10, Timestamp: at})
	if w.outcomeOf(ctx, http.MethodPost, "/api/agents/journal", err) == acked {
		w.record(func(r *Record) {
			r.Journal = append(r.Journal, JournalEntry{Agent: a.name, Cycle: cycle, EntryID: entry})
		})
	}
}

// publishCardSet publishes one set of one to three P3 cards.
func (w *Workload) publishCardSet(ctx context.Context, rng *rand.Rand) {
	key := fmt.Sprintf("wl-%016x", rng.Uint64())
	cards := make([]client.CardSpec, 1+rng.IntN(3))
	for i := range cards {
		cards[i] = client.CardSpec{Ref: fmt.Sprintf("c%d", i), Goal: "Workload: " + words(rng, 6),
			Acceptance: []string{words(rng, 4)}, Priority: "P3"}
	}
	set, err := w.client(w.cfg.Tokens.Orchestrator).PublishCardSet(ctx, key, cards...)
	switch w.outcomeOf(ctx, http.MethodPost, "/api/cardsets", err) {
	case refused:
		return
	case unanswered:
		w.record(func(r *Record) { r.UnknownCardSets = append(r.UnknownCardSets, key) })
		return
	}
	ids := make([]string, len(set.Cards))
	for i, c := range set.Cards {
		ids[i] = c.ID
	}
	w.record(func(r *Record) { r.CardSets = append(r.CardSets, CardSet{Key: key, SetID: set.SetID, Cards: ids}) })
}

// cycleBreaker opens one agent's breaker as the supervisor, has the admin
// resume it in the room, and verifies the half-open trial.
func (w *Workload) cycleBreaker(ctx context.Context, rng *rand.Rand) {
	name := w.cfg.Agents[rng.IntN(len(w.cfg.Agents))]
	supervisor := w.client(w.cfg.Tokens.Supervisor)
	event, err := supervisor.OpenBreaker(ctx, name, client.Breach{Severity: "infrastructure", Reason: "workload: " + words(rng, 5)})
	if w.outcomeOf(ctx, http.MethodPost, "/api/breaker/{agent}/open", err) != acked {
		return
	}
	cycle := BreakerCycle{Agent: name, Event: event}
	defer func() { w.record(func(r *Record) { r.Breakers = append(r.Breakers, cycle) }) }()
	ex := w.exchange(ctx, w.cfg.Admin, "!breaker resume "+cycle.Event)
	if ex.Answer == "" {
		return
	}
	cycle.Resumed = true
	state, err := supervisor.VerifyBreaker(ctx, name, true, "workload")
	cycle.Verified = w.outcomeOf(ctx, http.MethodPost, "/api/breaker/{agent}/verify", err) == acked && state == "closed"
}

var vocabulary = strings.Fields("vault ledger exporter budget report schema index cache queue render " +
	"migrate retry audit sync archive deploy verify review draft publish measure")

// words is n words drawn from the vocabulary.
func words(rng *rand.Rand, n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	return strings.Join(out, " ")
}
