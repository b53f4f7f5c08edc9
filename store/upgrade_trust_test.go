package store_test

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestUpgradeFillsCardTrust: a database at version 15 holds a card Jarvis
// published from a person's drafts and one an agent published over the
// API, with amendments of each kind; version 17 marks the agent's card
// and every amendment an agent or a bridge wrote external, and keeps the
// rest native.
func TestUpgradeFillsCardTrust(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.EmptyConfig(t, testEngine)
	uri := cfg.URI
	if cfg.Type == store.SQLite {
		uri = "file:" + cfg.URI + "?_foreign_keys=on"
	}
	old := fstest.MapFS{}
	err := fs.WalkDir(store.Upgrades(), ".", func(name string, d fs.DirEntry, err error) error {
		// The numbered files up to 15; not 00-latest-schema.sql, which
		// goes from 0 to the latest version.
		if err != nil || d.IsDir() || name < "01" || name >= "16" {
			return err
		}
		b, err := fs.ReadFile(store.Upgrades(), name)
		old[name] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	driver := cfg.Type
	if driver == store.Postgres {
		driver = "pgx" // the driver store.Open uses
	}
	db, err := dbutil.NewWithDialect(uri, driver)
	if err != nil {
		t.Fatal(err)
	}
	db.Owner = "jarvis"
	db.UpgradeTable = dbutil.BuildUpgradeTable().WithFSPath(old, ".").Finish()
	if err := db.Upgrade(ctx); err != nil {
		t.Fatalf("upgrade to 15: %v", err)
	}
	for _, q := range []string{
		`INSERT INTO card_set (id, idem_key, fingerprint, author, card_count, published_at) VALUES
			('set_chat', 'draft:draft_1', 'f1', 'main-agent', 1, 1), ('set_api', 'orch-1', 'f2', 'main-agent', 1, 1)`,
		`INSERT INTO card (id, set_id, position, goal, acceptance, spec_priority, author, priority, state, revision, created_at, updated_at) VALUES
			('card_chat', 'set_chat', 0, 'g', '[]', 'P2', 'main-agent', 'P2', 'published', 4, 1, 1),
			('card_api', 'set_api', 0, 'g', '[]', 'P2', 'main-agent', 'P2', 'published', 1, 1, 1)`,
		`INSERT INTO card_amendment (card_id, revision, kind, text, author, network, created_at) VALUES
			('card_chat', 2, 'clarification', 't', 'mos', '', 1),
			('card_chat', 3, 'answer', 't', '@alice:x', 'matrix', 1),
			('card_chat', 4, 'answer', 't', '@alice:x', 'telegram', 1)`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := store.Open(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.DB.Close()
	for _, c := range []struct{ query, want string }{
		{`SELECT source_trust FROM card WHERE id = 'card_chat'`, "native"},
		{`SELECT source_trust FROM card WHERE id = 'card_api'`, "external"},
		{`SELECT source_trust FROM card_amendment WHERE revision = 2`, "external"},
		{`SELECT source_trust FROM card_amendment WHERE revision = 3`, "native"},
		{`SELECT source_trust FROM card_amendment WHERE revision = 4`, "external"},
	} {
		var got string
		if err := s.DB.QueryRow(ctx, c.query).Scan(&got); err != nil || got != c.want {
			t.Errorf("%s = %q (%v), want %q", c.query, got, err, c.want)
		}
	}
}
