package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/app"
)

// runCLI runs jarvis with args as main does, and returns what it printed,
// the line main prints on failure, and the exit code.
func runCLI(t *testing.T, args ...string) (out, errLine string, code int) {
	t.Helper()
	root := newRootCommand()
	var buf bytes.Buffer
	root.SetOut(&buf)
	root.SetErr(&buf)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		errLine = "jarvis: " + err.Error()
	}
	return buf.String(), errLine, exitCode(err)
}

// TestExitCodes: every kind of failure has its own exit code, and the
// codes do not change: supervisors and scripts rely on them.
func TestExitCodes(t *testing.T) {
	for _, tt := range []struct {
		kind error
		code int
	}{
		{app.ErrFailed, 1}, {app.ErrRefused, 1}, {app.ErrConfig, 2}, {app.ErrFileMode, 6}, {app.ErrConsole, 2}, {app.ErrStore, 3}, {app.ErrMatrix, 4},
		{app.ErrAPI, 5}, {app.ErrBreakerOpen, 10}, {app.ErrLeaseHeld, 11}, {app.ErrTargetNotEmpty, 12}, {app.ErrBackupExists, 13},
		{app.ErrUsage, 64},
	} {
		if got, ok := exitCodes[tt.kind]; !ok || got != tt.code {
			t.Errorf("exit code of %v = %d (%v), want %d", tt.kind, got, ok, tt.code)
		}
	}
	if len(exitCodes) != 13 {
		t.Errorf("%d kinds have an exit code, want the 13 above", len(exitCodes))
	}
	if got := exitCode(nil); got != 0 {
		t.Errorf("exit code of success = %d, want 0", got)
	}
	if got := exitCode(errors.New(`unknown flag: --agnet`)); got != 64 {
		t.Errorf("exit code of an error of no kind = %d, want 64", got)
	}
}

// TestCLI runs subcommands end to end: the flag parser's refusals, and
// failures of each kind the app reports, with their exit codes and
// messages.
func TestCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "jarvis.db")
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("homeserver:\n  url: \"\"\nstore:\n  uri: %s\n", db)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "backup.db")
	for _, tt := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"version", []string{"version"}, 0, "jarvis dev (commit unknown, built unknown)", ""},
		{"--version", []string{"--version"}, 0, "jarvis dev (commit unknown, built unknown)", ""},
		{"an unknown command", []string{"nonsense"}, 64, "", `unknown command "nonsense" for "jarvis"`},
		{"a configuration that does not load", []string{"--config", filepath.Join(dir, "missing.yaml"), "token", "list"}, 2, "",
			"config file: open " + filepath.Join(dir, "missing.yaml")},
		{"run without a homeserver", []string{"--config", cfgPath, "run"}, 2, "", "homeserver.url: is empty"},
		{"a breaker with no database", []string{"--config", cfgPath, "circuit-breaker", "status", "--agent", "eve"}, 3, "",
			"no Jarvis database at " + db},
		{"status without an agent", []string{"--config", cfgPath, "circuit-breaker", "status"}, 64, "", `required flag(s) "agent" not set`},
		{"events with a bad limit", []string{"--config", cfgPath, "circuit-breaker", "events", "--agent", "eve", "--limit", "0"}, 64, "",
			"--limit must be from 1 to 100, not 0"},
		{"the first token list creates the database", []string{"--config", cfgPath, "token", "list"}, 0, "No tokens.", ""},
		{"a breaker never halted", []string{"--config", cfgPath, "circuit-breaker", "status", "--agent", "eve"}, 0, "eve has never been halted", ""},
		{"an agent token for no agent", []string{"--config", cfgPath, "token", "issue", "--role", "agent", "--agent", "nobody"}, 64, "",
			`"nobody" is not an agent Jarvis watches (none); add it with ` + "`jarvis agent add nobody --cadence 24h`"},
		{"an agent added", []string{"--config", cfgPath, "agent", "add", "nobody", "--cadence", "1h", "--grace", "5m"}, 0, "Added nobody.", ""},
		{"an agent changed", []string{"--config", cfgPath, "agent", "add", "NOBODY", "--schedule", "0 3 * * *", "--time-zone", "Europe/Berlin"}, 0,
			"Changed NOBODY.", ""},
		{"an agent with a cadence and a schedule", []string{"--config", cfgPath, "agent", "add", "late", "--cadence", "1h", "--schedule", "@daily"}, 64, "",
			"schedule: and a cadence were both given: give one"},
		{"the agents listed", []string{"--config", cfgPath, "agent", "list"}, 0, "NOBODY  0 3 * * * Europe/Berlin  0s     -           added by cli at", ""},
		{"a token for the added agent", []string{"--config", cfgPath, "token", "issue", "--role", "agent", "--agent", "nobody"}, 0,
			"Issued agent token", ""},
		{"an agent removed", []string{"--config", cfgPath, "agent", "remove", "nobody"}, 0, "Removed nobody", ""},
		{"an agent removed twice", []string{"--config", cfgPath, "agent", "remove", "nobody"}, 64, "", "not found"},
		{"backup without --to", []string{"--config", cfgPath, "backup"}, 64, "", `required flag(s) "to" not set`},
		{"a backup", []string{"--config", cfgPath, "backup", "--to", backup}, 0, "Wrote " + backup, ""},
		{"a backup over the last", []string{"--config", cfgPath, "backup", "--to", backup}, 13, "", "--to " + backup + " exists: pass --force"},
		{"the example configuration", []string{"config", "example"}, 0, "pickle_key: generate # example", ""},
		{"a valid configuration", []string{"--config", cfgPath, "config", "check"}, 0, cfgPath + " is a valid configuration.", ""},
		{"the example's placeholders", []string{"--config", "../../config/config.example.yaml", "config", "check"}, 2, "",
			"homeserver.url: is still the example's value (https://matrix.example.org): write your own\n"},
		{"run on the example", []string{"--config", "../../config/config.example.yaml", "run"}, 2, "",
			"bot.allowed_users: is still the example's value ([@*:example.org]): write your own"},
		{"console -x", []string{"console", "-c", cfgPath, "-x", "!ping", "--wait", "10s"}, 0, "pong", ""},
		{"console -c as the command, as before", []string{"console", "--config", cfgPath, "-c", "!ping", "--wait", "10s"}, 0,
			`jarvis: warning: -c is --config now; this release still runs "!ping" as a command, the next one will not: write -x "!ping"`, ""},
		{"console -c as the configuration", []string{"console", "-c", filepath.Join(dir, "missing.yaml"), "-x", "!ping"}, 2, "",
			"config file: open " + filepath.Join(dir, "missing.yaml")},
		{"migrate without --from", []string{"migrate", "--to", "postgres://127.0.0.1:1/jarvis"}, 64, "", `required flag(s) "from" not set`},
		{"migrate from no engine", []string{"migrate", "--from", "jarvis.db", "--to", "postgres://127.0.0.1:1/jarvis"}, 64, "",
			`--from must be sqlite:LOCATION, not "jarvis.db"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errLine, code := runCLI(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(errLine, tt.wantErr) || (tt.wantErr == "") != (errLine == "") {
				t.Errorf("exit %d, %q, output:\n%s\nwant exit %d, %q and output with %q", code, errLine, out, tt.wantCode, tt.wantErr, tt.wantOut)
			}
		})
	}
}
