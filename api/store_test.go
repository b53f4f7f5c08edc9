package api_test

import (
	"testing"

	"github.com/jarvis-hmi/jarvis/store"
)

// onEachEngine runs a benchmark once on SQLite and once on PostgreSQL.
func onEachEngine(b *testing.B, bench func(b *testing.B, engine string)) {
	for _, engine := range []string{store.SQLite, store.Postgres} {
		b.Run(engine, func(b *testing.B) { bench(b, engine) })
	}
}
