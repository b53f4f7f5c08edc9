// Package tesths starts the real test homeserver (Dendrite, through
// scripts/homeserver.sh) and drives people on it, for integration tests,
// benchmarks and the demo.
package tesths

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/synapseadmin"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testport"
)

// Homeserver is a running Dendrite.
type Homeserver struct {
	URL    string
	Dir    string
	secret string
	script string
}

// RepoRoot finds the repository root from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// RateLimit is the environment for Start that turns the client API's rate
// limiting on: threshold requests per device within cooloff, after which
// the homeserver answers 429 with retry_after_ms set to cooloff. The
// default test homeserver runs without it.
func RateLimit(threshold int, cooloff time.Duration) string {
	return fmt.Sprintf("JARVIS_HS_RATE_LIMIT=%d %d", threshold, cooloff.Milliseconds())
}

// Start builds Dendrite if needed and starts a fresh one with its state in
// dir. Extra environment (e.g. JARVIS_HS_APPSERVICE) goes to the script.
func Start(dir string, env ...string) (*Homeserver, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	h := &Homeserver{Dir: dir, script: filepath.Join(root, "scripts", "homeserver.sh")}
	port, err := testport.Get()
	if err != nil {
		return nil, err
	}
	if err := h.run(append(env, "JARVIS_HS_PORT="+strconv.Itoa(port)), "start", dir); err != nil {
		return nil, err
	}
	url, err := os.ReadFile(filepath.Join(dir, "url"))
	if err != nil {
		return nil, err
	}
	secret, err := os.ReadFile(filepath.Join(dir, "secret"))
	if err != nil {
		return nil, err
	}
	h.URL = strings.TrimSpace(string(url))
	h.secret = strings.TrimSpace(string(secret))
	return h, nil
}

func (h *Homeserver) run(env []string, args ...string) error {
	cmd := exec.Command(h.script, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("homeserver.sh %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// Stop stops the homeserver; its state stays in Dir for Restart.
func (h *Homeserver) Stop() error { return h.run(nil, "stop", h.Dir) }

// Kill ends the homeserver with SIGKILL, as a crash would, and waits
// until it is gone; its state stays in Dir for Restart.
func (h *Homeserver) Kill() error {
	raw, err := os.ReadFile(filepath.Join(h.Dir, "pid"))
	if err != nil {
		return fmt.Errorf("the homeserver is not running: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return fmt.Errorf("homeserver pid file: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill the homeserver: %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the homeserver (pid %d) outlived SIGKILL by 10 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return os.Remove(filepath.Join(h.Dir, "pid"))
}

// alive tells whether a process runs: a zombie, dead but not yet reaped by
// whoever inherited it, does not.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the command name, which is in parentheses.
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// Restart starts the stopped homeserver again on the same port.
func (h *Homeserver) Restart() error { return h.run(nil, "restart", h.Dir) }

// RandomName returns prefix plus random hex, for fresh users and rooms.
func RandomName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Register creates a user through the shared-secret admin API and
// returns a client logged in as them.
func (h *Homeserver) Register(ctx context.Context, localpart, password string) (*mautrix.Client, error) {
	cli, err := mautrix.NewClient(h.URL, "", "")
	if err != nil {
		return nil, err
	}
	admin := synapseadmin.Client{Client: cli}
	resp, err := admin.SharedSecretRegister(ctx, h.secret, synapseadmin.ReqSharedSecretRegister{
		Username: localpart,
		Password: password,
	})
	if err != nil {
		return nil, fmt.Errorf("register %s: %w", localpart, err)
	}
	cli.UserID = resp.UserID
	cli.AccessToken = resp.AccessToken
	cli.DeviceID = resp.DeviceID
	return cli, nil
}

// UserID builds the MXID of a local user.
func (h *Homeserver) UserID(localpart string) id.UserID {
	return id.NewUserID(localpart, "localhost")
}
