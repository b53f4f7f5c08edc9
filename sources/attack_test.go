package sources_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/sources"
	"github.com/jarvis-hmi/jarvis/store"
)

// storedValueBytes are the queries that add up what a source's values take
// where a pass keeps them: the source's history, the trips (history,
// journal, push queue), the evaluator's last observation and the notices.
var storedValueBytes = []string{
	`SELECT COALESCE(SUM(LENGTH(val)), 0), COALESCE(MAX(LENGTH(val)), 0) FROM source_reading`,
	`SELECT COALESCE(SUM(LENGTH(observed_value) + LENGTH(observed_context) + LENGTH(summary)), 0),
		COALESCE(MAX(LENGTH(observed_value)), 0) FROM tripwire_history`,
	`SELECT COALESCE(SUM(LENGTH(observed_value) + LENGTH(observed_context) + LENGTH(summary)), 0),
		COALESCE(MAX(LENGTH(observed_value)), 0) FROM tripwire_journal`,
	`SELECT COALESCE(SUM(LENGTH(observed_value) + LENGTH(observed_context) + LENGTH(summary)), 0),
		COALESCE(MAX(LENGTH(observed_value)), 0) FROM tripwire_push`,
	`SELECT COALESCE(SUM(LENGTH(last_observed)), 0), COALESCE(MAX(LENGTH(last_observed)), 0) FROM tripwire_state`,
	`SELECT COALESCE(SUM(LENGTH(body)), 0), COALESCE(MAX(LENGTH(body)), 0) FROM outbox`,
}

// stored returns the bytes the values take in all, and the longest one
// kept (a notice counts whole).
func stored(t *testing.T, st *store.Store) (total, longest int64) {
	t.Helper()
	for _, q := range storedValueBytes {
		var sum, most int64
		if err := st.DB.QueryRow(context.Background(), q).Scan(&sum, &most); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		total, longest = total+sum, max(longest, most)
	}
	return total, longest
}

// TestHugeSourceValuesAreCapped makes the attack of a url-fetch and a feed
// serving 300 KB values that change every other pass, watched by four
// tripwires that push every change, against the real fetchers and the
// real evaluator on a real store: each value is kept as at most
// sources.max_value_bytes (a prefix and a digest), so what a pass stores
// stays a few kilobytes, and every change still trips.
func TestHugeSourceValuesAreCapped(t *testing.T) {
	const huge = 300 << 10
	var pass atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The value changes every other pass, at its very end.
		v := strings.Repeat("x", huge) + fmt.Sprint(pass.Load()/2)
		switch r.URL.Path {
		case "/status.json":
			fmt.Fprintf(w, `{"a": %q, "b": %q}`, v, "b"+v)
		case "/feed.xml":
			fmt.Fprintf(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>Status</title>
<item><guid>%s</guid><title>outage %s</title><link>https://status.example.org/%s</link></item></channel></rss>`, v, v, v)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := exampleConfig()
	cfg.URLFetch = sources.FetchConfig{Enabled: true, AllowedHosts: []string{srv.URL}, Timeout: 5 * time.Second, MaxBytes: 4 << 20}
	cfg.RSS = sources.FetchConfig{Enabled: true, AllowedHosts: []string{srv.URL}, Timeout: 5 * time.Second, MaxBytes: 4 << 20}
	reg := registry(t, cfg)

	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			pass.Store(0)
			st := testdb.OpenStore(t, engine)
			clock := coretest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
			svc := services.Wiring{Store: st, Clock: clock, Room: services.TripwireRoom}.Tripwires(testconfig.Tripwires(), reg)
			ctx := context.Background()
			cooldown := 0
			for i, src := range []core.SourceRef{
				{Kind: "url-fetch", Param: srv.URL + "/status.json a"},
				{Kind: "url-fetch", Param: srv.URL + "/status.json b"},
				{Kind: "rss", Param: srv.URL + "/feed.xml outage"},
				{Kind: "rss", Param: srv.URL + "/feed.xml xxx"},
			} {
				if _, err := svc.Arm(ctx, "@mallory:example.org", tripwire.Draft{
					Label: fmt.Sprintf("huge %d", i), Rationale: "fill the disk", Source: src,
					Condition: tripwire.Condition{Op: tripwire.OpChanged},
					Action:    &tripwire.Action{Journal: true, Push: true}, CooldownSeconds: &cooldown,
				}); err != nil {
					t.Fatalf("arm on %s: %v", src, err)
				}
			}
			const passes = 8
			var before int64
			for range passes {
				if _, err := svc.Tick(ctx); err != nil {
					t.Fatalf("Tick() = %v", err)
				}
				pass.Add(1)
				clock.Advance(10 * time.Second)
				total, longest := stored(t, st)
				t.Logf("pass %d: %d bytes of values stored, the longest %d", pass.Load(), total-before, longest)
				if grew := total - before; grew > 32<<10 {
					t.Errorf("pass %d stored %d bytes of values, over 32 KB (8 KB a tripwire)", pass.Load(), grew)
				}
				before = total
				// A value is at most the cap, quoted as JSON; a notice holds
				// it once, with the rule and the reason it was armed.
				if longest > 2048 {
					t.Errorf("pass %d kept a value or notice of %d bytes", pass.Load(), longest)
				}
			}
			defs, err := svc.List(ctx, "@mallory:example.org")
			if err != nil {
				t.Fatal(err)
			}
			for _, def := range defs {
				trips, err := svc.History(ctx, "@mallory:example.org", def.ID, 0)
				if err != nil || len(trips) != 3 {
					t.Errorf("%s on %s tripped %d times (%v), want 3: once per change after the first reading", def.Label, def.Source.Kind, len(trips), err)
				}
			}
		})
	}
}
