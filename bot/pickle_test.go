package bot

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestShortPickleKey: a pickle key under MinPickleKey is refused for a
// database that holds no keys yet, naming the key; a database whose keys
// were saved with it keeps it, since changing it would lose them.
func TestShortPickleKey(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, store.SQLite)
	b := &Bot{cfg: Config{Encryption: EncryptionConfig{Enabled: true, PickleKey: "short"}}, deps: Deps{DB: st.DB}, log: zerolog.Nop()}
	err := b.checkPickleKeyLength(ctx)
	if !errors.As(err, new(permanentError)) || !strings.Contains(err.Error(), "bot.encryption.pickle_key: is 5 characters, fewer than 32") {
		t.Fatalf("a short key for a fresh database: %v, want a permanent refusal naming the key", err)
	}
	if _, err := st.DB.Exec(ctx, `CREATE TABLE crypto_account (account_id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if err := b.checkPickleKeyLength(ctx); err == nil {
		t.Fatal("a short key for a database with an empty key table was accepted")
	}
	if _, err := st.DB.Exec(ctx, `INSERT INTO crypto_account VALUES ('@jarvis:example.org')`); err != nil {
		t.Fatal(err)
	}
	if err := b.checkPickleKeyLength(ctx); err != nil {
		t.Errorf("a short key the database's keys were saved with was refused: %v", err)
	}
	b.cfg.Encryption.PickleKey = strings.Repeat("k", MinPickleKey)
	if err := b.checkPickleKeyLength(ctx); err != nil {
		t.Errorf("a key of %d characters was refused: %v", MinPickleKey, err)
	}
}
