package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// heldHistory is the store's history, whose backtest reads wait until
// the test lets them through.
type heldHistory struct {
	*store.Store
	entered chan struct{}
	release chan struct{}
}

func (h heldHistory) Latest(ctx context.Context, src core.SourceRef, from, to time.Time, limit int) ([]history.Point, error) {
	h.entered <- struct{}{}
	<-h.release
	return h.Store.Latest(ctx, src, from, to, limit)
}

// backtestFixture is the tripwire API on loopback over a real store.
type backtestFixture struct {
	base   string // the server's URL
	svc    *tripwire.Service
	clock  *coretest.Clock
	tokens map[string]string // personal tokens by scope
}

// newBacktestFixture serves the tripwire API of cfg, its history wired by
// wire, with personal tokens of the people named.
func newBacktestFixture(t *testing.T, cfg tripwire.Config, wire func(*store.Store, *tripwire.Deps), people ...string) backtestFixture {
	t.Helper()
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	sources := coretest.NewSources()
	sources.Set("integrity.gi", 0.8)
	svc := services.Wiring{Store: st, Clock: clock}.Tripwires(cfg, sources.Registry(), func(d *tripwire.Deps) { wire(st, d) })
	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, issueTokens(t, st).creds)
	api.RegisterTripwires(server, svc)
	tokens := map[string]string{}
	for _, p := range people {
		token, _, err := svc.CreateToken(context.Background(), p, "dashboard")
		if err != nil {
			t.Fatal(err)
		}
		tokens[p] = token
	}
	return backtestFixture{base: "http://" + api.ServeLoopback(t, server), svc: svc, clock: clock, tokens: tokens}
}

// postBacktest posts giDraft to the backtest route with token.
func postBacktest(t *testing.T, base, token string) (int, map[string]any) {
	req, err := http.NewRequest(http.MethodPost, base+"/api/tripwires/backtest", strings.NewReader(giDraft))
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Errorf("backtest answer: %v", err)
	}
	return resp.StatusCode, body
}

// TestParallelBacktestsAreBounded makes the attack of parallel backtests
// over real HTTP: with two at once allowed in all and one per person, a
// person's second while their first runs, and a third person's while two
// run, are refused with 429 naming the key that is full; the two running
// finish, and nothing is armed.
func TestParallelBacktestsAreBounded(t *testing.T) {
	const alice, bob, carol = "@alice:example.org", "@bob:example.org", "@carol:example.org"
	held := heldHistory{entered: make(chan struct{}, 8), release: make(chan struct{})}
	cfg := testconfig.Tripwires()
	cfg.Backtest.Concurrent, cfg.Backtest.ConcurrentPerPerson = 2, 1
	fx := newBacktestFixture(t, cfg, func(st *store.Store, d *tripwire.Deps) {
		held.Store = st
		d.History = held
	}, alice, bob, carol)
	base, tokens := fx.base, fx.tokens

	done := make(chan int, 2)
	for _, p := range []string{alice, bob} {
		go func() {
			code, _ := postBacktest(t, base, tokens[p])
			done <- code
		}()
		<-held.entered
	}
	for _, tt := range []struct {
		who, key string
	}{
		{alice, "tripwires.backtest.concurrent_per_person"},
		{carol, "tripwires.backtest.concurrent"},
	} {
		code, body := postBacktest(t, base, tokens[tt.who])
		if msg, _ := body["error"].(string); code != http.StatusTooManyRequests || !strings.Contains(msg, tt.key+" (") {
			t.Errorf("%s's backtest while two run: %d %v, want 429 naming %s", tt.who, code, body, tt.key)
		}
	}
	close(held.release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("a running backtest ended with %d, want 200", code)
		}
	}
	if code, body := postBacktest(t, base, tokens[carol]); code != http.StatusOK {
		t.Errorf("carol's backtest once the others ended: %d %v, want 200", code, body)
	}
	for _, p := range []string{alice, bob, carol} {
		if defs, err := fx.svc.List(context.Background(), p); err != nil || len(defs) != 0 {
			t.Errorf("%s has %d tripwires (%v) after backtests, want none", p, len(defs), err)
		}
	}
}

// TestBacktestReadsAtMostMaxReadings: a backtest over a history longer
// than tripwires.backtest.max_readings replays only its newest readings.
func TestBacktestReadsAtMostMaxReadings(t *testing.T) {
	const alice = "@alice:example.org"
	cfg := testconfig.Tripwires()
	cfg.Backtest.MaxReadings = 10
	fx := newBacktestFixture(t, cfg, func(*store.Store, *tripwire.Deps) {}, alice)
	if _, err := fx.svc.Arm(context.Background(), "@bob:example.org", tripwire.Draft{Label: "GI", Rationale: "keep GI read",
		Source: core.SourceRef{Kind: "integrity.gi"}, Condition: tripwire.Condition{Op: tripwire.OpLT, Threshold: 0.1}}); err != nil {
		t.Fatal(err)
	}
	for range 30 {
		fx.clock.Advance(time.Minute)
		if _, err := fx.svc.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	code, body := postBacktest(t, fx.base, fx.tokens[alice])
	if code != http.StatusOK || body["readings"] != float64(cfg.Backtest.MaxReadings) {
		t.Errorf("backtest over 30 readings: %d %v, want 200 replaying %d", code, body, cfg.Backtest.MaxReadings)
	}
}
