package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// fillWorkspace writes a little of everything into s: card sets (with
// their foreign keys), notices, a lease that has lapsed, and deleted
// outbox rows so that SQLite's AUTOINCREMENT has run past the largest key.
func fillWorkspace(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	cards := services.Wiring{Store: s, Clock: core.SystemClock{}}.Cards(crashConfig)
	for i := range 5 {
		if _, err := cards.Publish(ctx, crashSet(i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	for i := range 30 {
		n := core.Notice{Key: fmt.Sprintf("n%d", i), RoomID: "!room:test", Kind: core.NoticeMessage, Body: "hello", Thread: i%2 == 0}
		if err := s.Outbox().Enqueue(ctx, n); err != nil {
			t.Fatalf("enqueue: %v", err)
		}
	}
	if _, err := s.DB.Exec(ctx, "DELETE FROM outbox WHERE key IN ('n28', 'n29')"); err != nil {
		t.Fatal(err)
	}
	creds := services.Wiring{Store: s, Clock: core.SystemClock{}}.Credentials()
	if _, _, err := creds.Issue(ctx, credential.Agent, "EVE"); err != nil {
		t.Fatalf("issue: %v", err)
	}
	past := time.Now().Add(-time.Hour)
	if _, _, err := s.Leases().Acquire(ctx, "ws1", "jarvis-a", past, past.Add(leaseTTL)); err != nil {
		t.Fatalf("acquire: %v", err)
	}
}

// TestCopyToPostgres copies a SQLite workspace into PostgreSQL: every
// table, the same row counts, sequences past every key SQLite handed out,
// and a second copy into the now non-empty target is refused.
func TestCopyToPostgres(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("runs in the PostgreSQL pass")
	}
	ctx := context.Background()
	src := testdb.OpenStore(t, store.SQLite)
	fillWorkspace(t, src)
	dst := testdb.OpenStore(t, testEngine)

	counts, err := src.CopyTo(ctx, dst, time.Now())
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	byTable := map[string]store.TableCount{}
	for _, c := range counts {
		byTable[c.Table] = c
		if c.Source != c.Target {
			t.Errorf("%s: %d rows in the source, %d in the target", c.Table, c.Source, c.Target)
		}
	}
	for table, least := range map[string]int{"card_set": 5, "card": 15, "outbox": 28, "workspace_lease": 1, "tripwire_rev": 1, "api_credential": 1} {
		if byTable[table].Target < least {
			t.Errorf("%s: %d rows copied, want at least %d", table, byTable[table].Target, least)
		}
	}
	if byTable["card_set"].Table == "" || byTable["card"].Table == "" {
		t.Fatal("card tables missing from the copy")
	}
	pos := map[string]int{}
	for i, c := range counts {
		pos[c.Table] = i
	}
	if pos["card_set"] > pos["card"] || pos["card"] > pos["card_amendment"] {
		t.Errorf("tables not in foreign-key order: %v", counts)
	}

	// Booleans and text read back as they were written.
	got, err := dst.Outbox().Get(ctx, "n2")
	if err != nil || !got.Thread || got.Body != "hello" {
		t.Errorf("copied notice n2 = %+v, %v", got, err)
	}
	// A new notice gets a key past every one SQLite handed out (30).
	if err := dst.Outbox().Enqueue(ctx, core.Notice{Key: "after", RoomID: "!room:test", Kind: core.NoticeMessage, Body: "x"}); err != nil {
		t.Fatalf("enqueue after copy: %v", err)
	}
	var seq int64
	if err := dst.DB.QueryRow(ctx, "SELECT seq FROM outbox WHERE key = 'after'").Scan(&seq); err != nil || seq <= 30 {
		t.Errorf("seq of a new notice = %d (%v), want > 30", seq, err)
	}
	// The lease's epoch carries over: the next holder gets epoch 2.
	rec, ok, err := dst.Leases().Acquire(ctx, "ws1", "jarvis-b", time.Now(), time.Now().Add(leaseTTL))
	if err != nil || !ok || rec.Epoch != 2 {
		t.Errorf("acquire after copy = %+v %v %v, want epoch 2", rec, ok, err)
	}

	if _, err := src.CopyTo(ctx, dst, time.Now()); !errors.Is(err, store.ErrTargetNotEmpty) {
		t.Errorf("second copy: %v, want ErrTargetNotEmpty", err)
	}
}

// TestCopyRefusesALiveSource: a Jarvis still holding the source's lease
// must be stopped first.
func TestCopyRefusesALiveSource(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("runs in the PostgreSQL pass")
	}
	ctx := context.Background()
	src := testdb.OpenStore(t, store.SQLite)
	now := time.Now()
	if _, _, err := src.Leases().Acquire(ctx, "ws1", "jarvis-a", now, now.Add(leaseTTL)); err != nil {
		t.Fatal(err)
	}
	dst := testdb.OpenStore(t, testEngine)
	if _, err := src.CopyTo(ctx, dst, now); !errors.Is(err, store.ErrSourceInUse) {
		t.Errorf("copy: %v, want ErrSourceInUse", err)
	}
}
