package app

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"testing"
)

// errNoKind stands, in runCLI's answer, for an error of no kind (which
// cmd/jarvis ends with exit code 64).
var errNoKind = errors.New("an error of no kind")

// runCLI runs `jarvis ARGS` for the subcommands whose work the app does
// (circuit-breaker, token, backup, migrate), calling the app's function
// for each with the flags parsed as cmd/jarvis parses them (the flag
// parser's own errors, such as a required flag left out, are cmd/jarvis's
// and tested there). It returns what the command printed, the line main
// prints on failure, and the kind of the failure: nil when it succeeded,
// errNoKind for an error of no kind.
func runCLI(t *testing.T, args ...string) (out, errLine string, kind error) {
	t.Helper()
	ctx := context.Background()
	configPath := "config.yaml"
	if len(args) > 1 && args[0] == "--config" {
		configPath, args = args[1], args[2:]
	}
	var buf bytes.Buffer
	var run func(w io.Writer) error
	fs := flag.NewFlagSet("jarvis", flag.ContinueOnError)
	switch command := args[0] + " " + args[1]; command {
	case "circuit-breaker status", "circuit-breaker events", "circuit-breaker reset":
		agent, event := fs.String("agent", "", ""), fs.String("event", "", "")
		limit := fs.Int("limit", 10, "")
		run = func(w io.Writer) error {
			switch command {
			case "circuit-breaker status":
				return BreakerStatus(ctx, w, configPath, *agent)
			case "circuit-breaker events":
				return BreakerEvents(ctx, w, configPath, *agent, *limit)
			}
			return BreakerReset(ctx, w, configPath, *agent, *event)
		}
		args = args[2:]
	case "token issue":
		role, agent := fs.String("role", "", ""), fs.String("agent", "", "")
		run = func(w io.Writer) error { return IssueToken(ctx, w, configPath, *role, *agent) }
		args = args[2:]
	default:
		switch args[0] {
		case "backup":
			to, force := fs.String("to", "", ""), fs.Bool("force", false, "")
			run = func(w io.Writer) error { return Backup(ctx, w, configPath, *to, *force) }
		case "migrate":
			from, to := fs.String("from", "", ""), fs.String("to", "", "")
			run = func(w io.Writer) error { return Migrate(ctx, w, *from, *to) }
		default:
			t.Fatalf("runCLI does not run %q", args)
		}
		args = args[1:]
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("runCLI %q: %v", args, err)
	}
	err := run(&buf)
	if err == nil {
		return buf.String(), "", nil
	}
	kind = Kind(err)
	if kind == nil {
		kind = errNoKind
	}
	return buf.String(), fmt.Sprintf("jarvis: %v", err), kind
}
