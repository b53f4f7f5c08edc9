package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// breakerFixture is a configuration and its database, with eve halted
// through the breaker service as a running Jarvis would have done it.
type breakerFixture struct {
	cfgPath  string
	dbPath   string
	st       *store.Store
	breakers *breaker.Service
	eventID  string
}

func newBreakerFixture(t *testing.T) *breakerFixture {
	t.Helper()
	ctx := context.Background()
	storeCfg := testdb.NewConfig(t, store.SQLite)
	cfgPath := filepath.Join(filepath.Dir(storeCfg.URI), "config.yaml")
	cfg := fmt.Sprintf(`
homeserver:
  url: http://127.0.0.1:8008
bot:
  user_id: "@jarvis:jarvis.test"
  password: secret-password
  room: "#jarvis:jarvis.test"
  admins: ["@admin:example.org"]
  allowed_users: ["@*:jarvis.test"]
  encryption: {pickle_key: a-test-pickle-key-of-32-characters}
store:
  uri: %s
`, storeCfg.URI)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	st := testdb.OpenConfig(t, storeCfg)
	w := services.Wiring{Store: st, Clock: core.SystemClock{}, Room: "!room:example.org", Admins: []string{"@admin:example.org"}}
	b := w.Breakers(testconfig.Breaker())
	ev, err := b.Open(ctx, "eve", breaker.OpenInput{Severity: breaker.SeveritySafety,
		Reason: "tried to delete the workspace", Evidence: []string{"tool call: rm -rf /srv/workspace"}})
	if err != nil {
		t.Fatal(err)
	}
	return &breakerFixture{cfgPath: cfgPath, dbPath: storeCfg.URI, st: st, breakers: b, eventID: ev.ID}
}

func TestCircuitBreakerCLI(t *testing.T) {
	host, _ := os.Hostname()
	operator := "operator@" + host
	tests := []struct {
		name      string
		setup     func(t *testing.T, fx *breakerFixture)
		args      string // after `--config <file> circuit-breaker`; {id} is eve's event
		wantKind  error
		wantOut   []string
		wantErr   []string
		wantState breaker.State // eve's breaker afterwards
	}{
		{name: "status of a halted agent fails with the reason", args: "status --agent eve", wantKind: ErrBreakerOpen,
			wantOut: []string{"eve: open since", "the agent is halted", "event:     {id} (safety)", "reason:    tried to delete the workspace",
				"evidence:  [1] tool call: rm -rf /srv/workspace", "`!breaker resume {id}`", "jarvis circuit-breaker reset --agent eve"},
			wantErr: []string{"jarvis: circuit breaker of eve is open (event {id}): tried to delete the workspace"}, wantState: breaker.Open},
		{name: "status names who is reviewing", args: "status --agent eve", wantKind: ErrBreakerOpen,
			setup: func(t *testing.T, fx *breakerFixture) {
				if _, err := fx.breakers.Review(context.Background(), fx.eventID, "@alice:example.org"); err != nil {
					t.Fatal(err)
				}
			},
			wantOut: []string{"reviewing: @alice:example.org since"}, wantState: breaker.Open},
		{name: "status of a half-open agent lets it run", args: "status --agent eve", wantKind: nil,
			setup: func(t *testing.T, fx *breakerFixture) {
				if _, err := fx.breakers.Resume(context.Background(), fx.eventID, "@admin:example.org"); err != nil {
					t.Fatal(err)
				}
			},
			wantOut: []string{"eve: half-open since", "eve may run", "supervisor's verification"}, wantState: breaker.HalfOpen},
		{name: "status of an agent never halted", args: "status --agent gi", wantKind: nil,
			wantOut: []string{"gi: closed", "gi has never been halted"}, wantState: breaker.Open},
		{name: "status of a bad agent name", args: "status --agent a/b", wantKind: ErrUsage,
			wantErr: []string{"agent: must be 1 to 64 letters"}, wantState: breaker.Open},
		{name: "events with their history", args: "events --agent eve", wantKind: nil,
			setup: func(t *testing.T, fx *breakerFixture) {
				if _, err := fx.breakers.Review(context.Background(), fx.eventID, "@alice:example.org"); err != nil {
					t.Fatal(err)
				}
			},
			wantOut: []string{"{id}  ", "open now", "reason:    tried to delete the workspace", "history:",
				"open by supervisor (closed -> open)", "review by @alice:example.org (open -> open): reviewing"}, wantState: breaker.Open},
		{name: "events of an agent never halted", args: "events --agent gi", wantKind: nil,
			wantOut: []string{"gi has never been halted."}, wantState: breaker.Open},
		{name: "events with a bad limit", args: "events --agent eve --limit 0", wantKind: ErrUsage,
			wantErr: []string{"--limit must be from 1 to 100"}, wantState: breaker.Open},
		{name: "reset refuses while a Jarvis holds the lease", args: "reset --agent eve", wantKind: ErrLeaseHeld,
			setup: func(t *testing.T, fx *breakerFixture) {
				now := time.Now()
				if _, ok, err := fx.st.Leases().Acquire(context.Background(), "default", "jarvis-host/42/abc", now, now.Add(time.Minute)); err != nil || !ok {
					t.Fatalf("acquire: %v %v", ok, err)
				}
			},
			wantErr: []string{"Jarvis jarvis-host/42/abc holds the lease", "`!breaker reset <event>`", "Nothing changed"}, wantState: breaker.Open},
		{name: "reset of an event refuses while a Jarvis holds the lease", args: "reset --agent eve --event {id}", wantKind: ErrLeaseHeld,
			setup: func(t *testing.T, fx *breakerFixture) {
				now := time.Now()
				if _, ok, err := fx.st.Leases().Acquire(context.Background(), "default", "jarvis-host/42/abc", now, now.Add(time.Minute)); err != nil || !ok {
					t.Fatalf("acquire: %v %v", ok, err)
				}
			},
			wantErr: []string{"`!breaker reset {id}`"}, wantState: breaker.Open},
		{name: "reset overrules once the lease has lapsed", args: "reset --agent eve", wantKind: nil,
			setup: func(t *testing.T, fx *breakerFixture) {
				past := time.Now().Add(-time.Hour)
				if _, ok, err := fx.st.Leases().Acquire(context.Background(), "default", "jarvis-host/42/abc", past, past.Add(time.Minute)); err != nil || !ok {
					t.Fatalf("acquire: %v %v", ok, err)
				}
			},
			wantOut: []string{"eve: closed. Overruled event {id} as " + operator}, wantState: breaker.Closed},
		{name: "reset of a given event", args: "reset --agent eve --event {id}", wantKind: nil,
			wantOut: []string{"Overruled event {id}"}, wantState: breaker.Closed},
		{name: "reset of an event of another agent", args: "reset --agent gi --event {id}", wantKind: ErrFailed,
			wantErr: []string{"event {id} is a halt of eve, not of gi; nothing changed"}, wantState: breaker.Open},
		{name: "reset of an unknown event", args: "reset --agent eve --event brk_00000000", wantKind: ErrFailed,
			wantErr: []string{"brk_00000000", "not found"}, wantState: breaker.Open},
		{name: "reset of a closed breaker has nothing to do", args: "reset --agent gi", wantKind: nil,
			wantOut: []string{"gi: closed, nothing to reset."}, wantState: breaker.Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newBreakerFixture(t)
			if tt.setup != nil {
				tt.setup(t, fx)
			}
			fill := func(s string) string { return strings.ReplaceAll(s, "{id}", fx.eventID) }
			args := append([]string{"--config", fx.cfgPath, "circuit-breaker"}, strings.Fields(fill(tt.args))...)
			out, errLine, kind := runCLI(t, args...)
			if kind != tt.wantKind {
				t.Errorf("failure %v, want %v\nout: %s\nerr: %s", kind, tt.wantKind, out, errLine)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, fill(w)) {
					t.Errorf("output lacks %q:\n%s", fill(w), out)
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errLine, fill(w)) {
					t.Errorf("error lacks %q: %s", fill(w), errLine)
				}
			}
			st, err := fx.breakers.Status(context.Background(), "eve")
			if err != nil {
				t.Fatal(err)
			}
			if st.State != tt.wantState {
				t.Errorf("breaker of eve is %s afterwards, want %s", st.State, tt.wantState)
			}
		})
	}
}

// TestCircuitBreakerCLIResetIsAudited: the overrule names the operator in
// the audit trail, queues the edit of the halt notice in its room for the
// next Jarvis to send, and status then passes.
func TestCircuitBreakerCLIResetIsAudited(t *testing.T) {
	ctx := context.Background()
	fx := newBreakerFixture(t)
	host, _ := os.Hostname()
	if _, errLine, kind := runCLI(t, "--config", fx.cfgPath, "circuit-breaker", "reset", "--agent", "eve"); kind != nil {
		t.Fatalf("reset failed: %s", errLine)
	}
	history, err := fx.breakers.History(ctx, fx.eventID)
	if err != nil {
		t.Fatal(err)
	}
	last := history[len(history)-1]
	if last.Action != breaker.ActOverrule || last.Actor != "operator@"+host {
		t.Errorf("last audit row: %s by %s, want overrule by operator@%s", last.Action, last.Actor, host)
	}
	waiting, err := fx.st.Outbox().Waiting(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var edit *core.OutboxEntry
	for i, n := range waiting {
		if n.Kind == core.NoticeEdit && n.Target == "breaker:"+fx.eventID && strings.Contains(n.Body, "OVERRULED") {
			edit = &waiting[i]
		}
	}
	if edit == nil || edit.RoomID != "!room:example.org" {
		t.Fatalf("no edit of the halt notice in its room queued: %+v", edit)
	}
	tests := []struct {
		name     string
		args     []string
		wantKind error
		want     string
	}{
		{"status passes", []string{"status", "--agent", "eve"}, nil, "Last halt: " + fx.eventID},
		{"events show the overrule", []string{"events", "--agent", "eve"}, nil, "overrule by operator@" + host + " (open -> closed)"},
		{"a second reset has nothing to do", []string{"reset", "--agent", "eve"}, nil, "nothing to reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errLine, kind := runCLI(t, append([]string{"--config", fx.cfgPath, "circuit-breaker"}, tt.args...)...)
			if kind != tt.wantKind || !strings.Contains(out, tt.want) {
				t.Errorf("failure %v (want %v), output lacks %q:\n%s%s", kind, tt.wantKind, tt.want, out, errLine)
			}
		})
	}
}

func TestCircuitBreakerCLIWithoutDatabase(t *testing.T) {
	fx := newBreakerFixture(t)
	cfg, err := os.ReadFile(fx.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "elsewhere.db")
	path := filepath.Join(t.TempDir(), "config.yaml")
	text := strings.Replace(string(cfg), "uri: ", "uri: "+missing+" #", 1)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errLine, kind := runCLI(t, "--config", path, "circuit-breaker", "status", "--agent", "eve")
	if kind != ErrStore || !strings.Contains(errLine, "no Jarvis database at "+missing) {
		t.Errorf("failure %v, %q; want %v and that no database is there", kind, errLine, ErrStore)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("status created a database")
	}
}
