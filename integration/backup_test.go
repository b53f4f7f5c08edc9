package integration

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestBackupRestore: `jarvis backup` copies the database of a Jarvis that
// is answering a person at that moment; that Jarvis stops, and one
// started on the copy still has the tripwire armed before the backup and
// reads and answers in the encrypted room as the same device with the
// same keys. A copy started with another pickle key stops at once, naming
// the key.
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: "workspace:\n  lease_ttl: 3s\nfleet:\n  agents:\n    - name: EVE\n"})
	room := j.joinRoom(t, alice)
	armed := tesths.Body(j.ask(t, alice, room, `!tw arm agent.status eq offline --param EVE --label "EVE offline" --because "EVE carries the nightly run"`))
	if !strings.Contains(armed, "Armed") {
		t.Fatalf("!tw arm got %q", armed)
	}
	devices, _ := jarvisDevices(t, alice, j)

	dir := t.TempDir()
	to := filepath.Join(dir, "jarvis-backup.db")
	type result struct {
		out  string
		code int
	}
	done := make(chan result, 1)
	go func() {
		out, err := exec.Command(jarvisBin, "backup", "--config", j.cfgPath, "--to", to).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		done <- result{string(out), code}
	}()
	// Jarvis keeps answering while the copy is taken.
	for range 3 {
		j.ask(t, alice, room, "!ping")
	}
	res := <-done
	if res.code != 0 {
		t.Fatalf("jarvis backup: exit %d\n%s", res.code, res.out)
	}
	for _, want := range []string{"Wrote " + to, "integrity checked", "tripwire", "crypto_account", "pickle_key"} {
		if !strings.Contains(res.out, want) {
			t.Errorf("the backup's output lacks %q:\n%s", want, res.out)
		}
	}
	if fi, err := os.Stat(to); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the copy: %v, %v; want mode 600", fi, err)
	}
	j.ask(t, alice, room, "!ping") // the backup left the running Jarvis as it was
	j.Stop()

	wrongKey := filepath.Join(dir, "wrong-key.db")
	copyFile(t, to, wrongKey)
	wrong := j.Twin(t, "JARVIS_STORE_URI="+wrongKey, "JARVIS_BOT_ENCRYPTION_PICKLE_KEY=another-pickle-key-of-32-characters")
	select {
	case <-wrong.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("Jarvis kept running on the copy with another pickle key:\n%s", wrong.logs.String())
	}
	if code := wrong.cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(wrong.logs.String(), "bot.encryption.pickle_key: does not decrypt") {
		t.Errorf("another pickle key: exit %d, want 2 and the key named:\n%s", code, wrong.logs.String())
	}

	j.Twin(t, "JARVIS_STORE_URI="+to)
	list := tesths.Body(j.ask(t, alice, room, "!tw list"))
	if !strings.Contains(list, "EVE offline") {
		t.Errorf("!tw list on the restored Jarvis: %q, want the tripwire armed before the backup", list)
	}
	sent, err := alice.Say(ctx, room, "!ping")
	if err != nil {
		t.Fatal(err)
	}
	sentEncrypted(t, alice, sent)
	if _, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("no encrypted answer from the restored Jarvis: %v", err)
	}
	// Every message of Jarvis's was readable: the restored Jarvis did not
	// send again at a megolm message index the old one had used after the
	// backup (a client refuses that as a replay).
	read := map[id.EventID]bool{}
	for _, evt := range alice.Events(func(evt *event.Event) bool { return evt.Sender == j.UserID && tesths.Encrypted(evt) }) {
		read[evt.ID] = true
	}
	for _, evt := range alice.Events(func(evt *event.Event) bool { return evt.Sender == j.UserID && evt.Type == event.EventEncrypted }) {
		if !read[evt.ID] {
			t.Errorf("alice could not read Jarvis's message %s", evt.ID)
		}
	}
	if after, _ := jarvisDevices(t, alice, j); !maps.Equal(after, devices) {
		t.Errorf("Jarvis's devices after the restore: %v, before: %v", after, devices)
	}
}

// copyFile copies a file, as an operator restoring a backup with cp does.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
