package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testconfig"
)

// BenchmarkPublishCardSets publishes card sets of five cards through
// POST /api/cardsets over real HTTP on loopback, from 16 concurrent
// clients, into a real SQLite file, then a real PostgreSQL database, with the default priority budget. It
// reports published sets per second, and fails if any set was refused or
// is not complete in the database afterwards.
func BenchmarkPublishCardSets(b *testing.B) { onEachEngine(b, benchmarkPublishCardSets) }

func benchmarkPublishCardSets(b *testing.B, engine string) {
	const clients, cardsPerSet = 16, 5
	fx := newCardsAPIFixtureOn(b, engine, core.SystemClock{}, testconfig.Cards())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- fx.server.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			b.Errorf("serve: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String() + "/api/cardsets"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	defer client.CloseIdleConnections()

	body := func(i int64) []byte {
		var buf bytes.Buffer
		buf.WriteString(`{"cards": [`)
		for j := range cardsPerSet {
			if j > 0 {
				buf.WriteString(", ")
			}
			dep := ""
			if j > 0 {
				dep = fmt.Sprintf(`, "depends_on": ["c%d"]`, j-1)
			}
			fmt.Fprintf(&buf, `{"ref": "c%d", "goal": "Set %d, step %d", "acceptance": ["tests pass", "reviewed"], "priority": "P%d"%s}`,
				j, i, j, 2+j%2, dep)
		}
		buf.WriteString("]}")
		return buf.Bytes()
	}

	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body(i)))
				req.Header.Set("Authorization", "Bearer "+fx.tokens.orchestrator)
				req.Header.Set(api.IdempotencyKeyHeader, fmt.Sprintf("bench-%d", i))
				resp, err := client.Do(req)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					firstErr.CompareAndSwap(nil, fmt.Errorf("set %d: status %d", i, resp.StatusCode))
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatalf("publish: %v", err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "sets/s")

	var sets, cards int
	if err := fx.store.DB.QueryRow(context.Background(), "SELECT COUNT(*) FROM card_set").Scan(&sets); err != nil {
		b.Fatalf("count sets: %v", err)
	}
	if err := fx.store.DB.QueryRow(context.Background(), "SELECT COUNT(*) FROM card").Scan(&cards); err != nil {
		b.Fatalf("count cards: %v", err)
	}
	if sets != b.N || cards != cardsPerSet*b.N {
		b.Fatalf("%d sets and %d cards stored, want %d and %d", sets, cards, b.N, cardsPerSet*b.N)
	}
}
