package workload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
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

// call sends body as JSON with token and decodes a JSON answer into out
// when its status is want. A refusal is counted under route and its
// status, a request without an answer under route (unless the workload is
// stopping).
func (w *Workload) call(ctx context.Context, token, method, path, route string, headers map[string]string, body any, want int, out any) outcome {
	data, err := json.Marshal(body)
	if err != nil {
		panic(fmt.Sprintf("workload: %s: %v", route, err))
	}
	req, err := http.NewRequestWithContext(ctx, method, w.cfg.API+path, bytes.NewReader(data))
	if err != nil {
		panic(fmt.Sprintf("workload: %s: %v", route, err))
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	label := method + " " + route
	resp, err := w.http.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			w.record(func(r *Record) { r.Failed[label]++ })
		}
		return unanswered
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() == nil {
			w.record(func(r *Record) { r.Failed[label]++ })
		}
		return unanswered
	}
	if resp.StatusCode != want {
		w.record(func(r *Record) { r.Refused[fmt.Sprintf("%s %d", label, resp.StatusCode)]++ })
		return refused
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			w.record(func(r *Record) { r.Refused[label+" undecodable"]++ })
			return refused
		}
	}
	return acked
}

func apiNow() (time.Time, string) {
	now := time.Now().UTC().Truncate(time.Second)
	return now, now.Format(time.RFC3339)
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
	token := w.cfg.Tokens.Agents[a.name]
	mii := miiLow + rng.Float64()*(miiHigh-miiLow)
	mii = float64(int(mii*1000)) / 1000
	at, ts := apiNow()
	var hb struct {
		OK bool `json:"ok"`
	}
	got := w.call(ctx, token, http.MethodPost, "/api/agents/heartbeat", "/api/agents/heartbeat", nil, map[string]any{
		"agent": a.name, "cycle": cycle, "timestamp": ts, "mii": mii, "mode_self_report": "green",
		"notes": fmt.Sprintf("workload heartbeat %d", a.n),
	}, http.StatusOK, &hb)
	w.record(func(r *Record) {
		k := AgentCycle{a.name, cycle}
		hbs := r.Heartbeats[k]
		switch {
		case got == acked && hb.OK:
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
	sum := sha256.Sum256([]byte(content))
	if w.call(ctx, token, http.MethodPost, "/api/agents/journal", "/api/agents/journal", nil, map[string]any{
		"agent": a.name, "cycle": cycle, "entry_id": entry, "title": "Workload entry " + entry,
		"content": content, "content_signature": "sha256:" + hex.EncodeToString(sum[:]),
		"signal_weight": float64(rng.IntN(11)) / 10, "timestamp": ts,
	}, http.StatusCreated, nil) == acked {
		w.record(func(r *Record) {
			r.Journal = append(r.Journal, JournalEntry{Agent: a.name, Cycle: cycle, EntryID: entry})
		})
	}
}

// publishCardSet publishes one set of one to three P3 cards.
func (w *Workload) publishCardSet(ctx context.Context, rng *rand.Rand) {
	key := fmt.Sprintf("wl-%016x", rng.Uint64())
	cards := make([]map[string]any, 1+rng.IntN(3))
	for i := range cards {
		cards[i] = map[string]any{"ref": fmt.Sprintf("c%d", i), "goal": "Workload: " + words(rng, 6),
			"acceptance": []string{words(rng, 4)}, "priority": "P3"}
	}
	var set struct {
		SetID string `json:"set_id"`
		Cards []struct {
			ID string `json:"id"`
		} `json:"cards"`
	}
	switch w.call(ctx, w.cfg.Tokens.Orchestrator, http.MethodPost, "/api/cardsets", "/api/cardsets",
		map[string]string{"Idempotency-Key": key}, map[string]any{"cards": cards}, http.StatusOK, &set) {
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
	var opened struct {
		Event struct {
			ID string `json:"id"`
		} `json:"event"`
	}
	if w.call(ctx, w.cfg.Tokens.Supervisor, http.MethodPost, "/api/breaker/"+name+"/open", "/api/breaker/{agent}/open", nil,
		map[string]any{"severity": "infrastructure", "reason": "workload: " + words(rng, 5)}, http.StatusCreated, &opened) != acked {
		return
	}
	cycle := BreakerCycle{Agent: name, Event: opened.Event.ID}
	defer func() { w.record(func(r *Record) { r.Breakers = append(r.Breakers, cycle) }) }()
	ex := w.exchange(ctx, w.cfg.Admin, "!breaker resume "+cycle.Event)
	if ex.Answer == "" {
		return
	}
	cycle.Resumed = true
	var verified struct {
		State string `json:"state"`
	}
	cycle.Verified = w.call(ctx, w.cfg.Tokens.Supervisor, http.MethodPost, "/api/breaker/"+name+"/verify", "/api/breaker/{agent}/verify", nil,
		map[string]any{"ok": true, "note": "workload"}, http.StatusOK, &verified) == acked && verified.State == "closed"
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
