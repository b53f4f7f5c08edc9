package api_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
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
	srv := serveBench(b, fx.server, clients)

	body := func(i int) []byte {
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

	var firstErr atomic.Value
	elapsed := srv.drive(func(_, i int) {
		header := map[string]string{api.IdempotencyKeyHeader: fmt.Sprintf("bench-%d", i)}
		if err := srv.post("/api/cardsets", fx.tokens.orchestrator, body(i), header); err != nil {
			firstErr.CompareAndSwap(nil, fmt.Errorf("set %d: %w", i, err))
		}
	})
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
