package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestBackupCLI backs up a workspace whose store is open (its last writes
// still in the WAL), opens the copy as Jarvis would and finds the
// tripwire, the API token and the halted breaker; then refuses to replace
// the copy without --force.
func TestBackupCLI(t *testing.T) {
	ctx := context.Background()
	fx := newBreakerFixture(t)
	now := time.Now().UTC().Truncate(time.Second)
	err := fx.st.InTx(ctx, func(ctx context.Context) error {
		return fx.st.Tripwires().InsertTripwire(ctx, tripwire.Record{Scope: "@alice:example.org", Definition: tripwire.Definition{
			ID: "tw_backup", Label: "GI below 0.70", Rationale: "watch GI",
			Source:    core.SourceRef{Kind: "snapshot.metric", Param: "GI"},
			Condition: tripwire.Condition{Op: tripwire.OpLT, Threshold: 0.7},
			Action:    tripwire.Action{Journal: true}, CooldownSeconds: 60,
			Status: tripwire.Armed, CreatedAt: now, UpdatedAt: now,
		}})
	})
	if err != nil {
		t.Fatal(err)
	}
	out, errLine, kind := runCLI(t, "--config", fx.cfgPath, "token", "issue", "--role", "supervisor")
	if kind != nil {
		t.Fatalf("token issue: %v, %s", kind, errLine)
	}
	fields := strings.Fields(out)
	token := fields[len(fields)-1]

	dir := t.TempDir()
	to := filepath.Join(dir, "jarvis-backup.db")
	out, errLine, kind = runCLI(t, "--config", fx.cfgPath, "backup", "--to", to)
	if kind != nil {
		t.Fatalf("backup: %v, %s\n%s", kind, errLine, out)
	}
	for _, want := range []string{"Wrote " + to, "schema version", "integrity checked", "tripwire", "api_credential", "breaker_event"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	fi, err := os.Stat(to)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the copy has mode %o, want 600", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files after the backup, want the copy only", len(entries))
	}

	cp, err := store.Open(ctx, store.Config{Type: store.SQLite, URI: to}, zerolog.Nop())
	if err != nil {
		t.Fatalf("open the copy: %v", err)
	}
	defer cp.Close()
	tws, err := cp.Tripwires().ListTripwires(ctx, "@alice:example.org")
	if err != nil || len(tws) != 1 || tws[0].ID != "tw_backup" || tws[0].Status != tripwire.Armed {
		t.Errorf("tripwires in the copy: %+v, %v; want tw_backup armed", tws, err)
	}
	creds := services.Wiring{Store: cp, Clock: core.SystemClock{}}.Credentials()
	if p, err := creds.Authenticate(ctx, token); err != nil || p.Role != credential.Supervisor {
		t.Errorf("the supervisor token against the copy: %+v, %v", p, err)
	}
	var events int
	if err := cp.DB.QueryRow(ctx, "SELECT count(*) FROM breaker_event WHERE id = $1", fx.eventID).Scan(&events); err != nil || events != 1 {
		t.Errorf("eve's breaker event in the copy: %d, %v", events, err)
	}

	before, _ := os.ReadFile(to)
	_, errLine, kind = runCLI(t, "--config", fx.cfgPath, "backup", "--to", to)
	if kind != ErrBackupExists || !strings.Contains(errLine, "--force") {
		t.Errorf("a second backup to the same file: %v, %q; want %v and a refusal naming --force", kind, errLine, ErrBackupExists)
	}
	if after, _ := os.ReadFile(to); !bytes.Equal(before, after) {
		t.Error("the refused backup changed the existing file")
	}
	_, errLine, kind = runCLI(t, "--config", fx.cfgPath, "backup", "--to", to, "--force")
	if kind != nil {
		t.Errorf("backup --force: %v, %s", kind, errLine)
	}
}

// TestBackupCLIBadTarget: a target that cannot take the copy is refused
// with an error naming what is wrong, and nothing is written. (No --to at
// all is the flag parser's: see cmd/jarvis's TestCLI.)
func TestBackupCLIBadTarget(t *testing.T) {
	fx := newBreakerFixture(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		name     string
		args     []string
		wantKind error
		wantErr  string
	}{
		{"empty --to", []string{"--to", ""}, ErrUsage, "--to is empty"},
		{"a directory", []string{"--to", dir}, ErrUsage, "is a directory"},
		{"a missing directory", []string{"--to", filepath.Join(dir, "missing", "jarvis.db")}, ErrUsage, "does not exist"},
		{"the database itself", []string{"--to", fx.dbPath, "--force"}, ErrUsage, "the workspace's database itself"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errLine, kind := runCLI(t, append([]string{"--config", fx.cfgPath, "backup"}, tt.args...)...)
			if kind != tt.wantKind || !strings.Contains(errLine, tt.wantErr) {
				t.Errorf("failure %v, %q; want %v and %q", kind, errLine, tt.wantKind, tt.wantErr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%d files written", len(entries))
			}
		})
	}
}

// TestBackupCLIPostgres: on PostgreSQL the command refuses and points to
// pg_dump.
func TestBackupCLIPostgres(t *testing.T) {
	fx := newBreakerFixture(t)
	t.Setenv("JARVIS_STORE_TYPE", store.Postgres)
	t.Setenv("JARVIS_STORE_URI", "postgres://jarvis@127.0.0.1:1/jarvis")
	to := filepath.Join(t.TempDir(), "jarvis.db")
	_, errLine, kind := runCLI(t, "--config", fx.cfgPath, "backup", "--to", to)
	if kind != ErrUsage || !strings.Contains(errLine, "pg_dump") {
		t.Errorf("failure %v, %q; want %v and pg_dump", kind, errLine, ErrUsage)
	}
	if _, err := os.Stat(to); err == nil {
		t.Error("a file was written")
	}
}
