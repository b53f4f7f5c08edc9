// Package integration tests Jarvis as people meet it: the real jarvis
// binary, as a subprocess, against a real Dendrite homeserver.
package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/store"
)

var (
	hs        *tesths.Homeserver
	jarvisBin string
	// bridgeAS owns @telegram_… and @whatsapp_… puppets, as a mautrix
	// bridge would.
	bridgeAS *tesths.Appservice
)

// envJarvisBin names a prebuilt jarvis binary to test instead of building
// one.
const envJarvisBin = "JARVIS_TEST_BIN"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envLoadGenerator); spec != "" {
		// This binary started again as a load generator (see loadGenerator).
		os.Exit(generateLoad(spec))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "jarvis-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	root, err := tesths.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// A jarvis built once for the whole run (make test builds it before
	// the tests, a machine without Go gets it carried), or built here.
	jarvisBin = os.Getenv(envJarvisBin)
	if jarvisBin == "" {
		jarvisBin = filepath.Join(tmp, "jarvis")
		build := exec.Command("go", "build", "-tags", "goolm", "-o", jarvisBin, "./cmd/jarvis")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build jarvis: %v\n%s", err, out)
			return 1
		}
	}
	bridgeAS, err = tesths.NewAppservice(filepath.Join(tmp, "appservice"), "telegram_", "whatsapp_")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer bridgeAS.Close()
	hs, err = tesths.Start(filepath.Join(tmp, "homeserver"), bridgeAS.Env())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer hs.Stop()
	return m.Run()
}

// ownHomeserver starts a homeserver for t alone, for a test that stops,
// kills or slows it, so that the tests running beside it on the shared
// one are not disturbed; env goes to scripts/homeserver.sh. It is stopped
// when t ends.
func ownHomeserver(t *testing.T, env ...string) *tesths.Homeserver {
	t.Helper()
	server, err := tesths.Start(filepath.Join(t.TempDir(), "homeserver"), env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	return server
}

// jarvis is one Jarvis process under test.
type jarvis struct {
	t       testing.TB
	UserID  id.UserID
	Alias   string
	Store   store.Config // the database it runs on
	cfgPath string
	// env is added to the process's environment (JARVIS_… overrides).
	env []string
	// host is the network namespace it runs in; nil runs it here.
	host   *host
	cmd    *exec.Cmd
	logs   *syncBuffer
	exited chan struct{}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// options tune a test Jarvis's configuration.
type options struct {
	admins  []id.UserID
	allowed []string
	extra   string
	// store is the store section's engine and URI; empty means a fresh
	// SQLite file.
	store store.Config
	// plaintext turns end-to-end encryption off: Jarvis's room is created
	// unencrypted.
	plaintext bool
	// hs is the homeserver Jarvis runs on; nil means the package's.
	hs *tesths.Homeserver
	// displayName is set as Jarvis's display name before it starts.
	displayName string
	// host is the second machine Jarvis runs on, reaching the homeserver
	// and the database over its link; nil runs it here.
	host *host
	// env is added to the process's environment (JARVIS_… overrides).
	env []string
	// pickleKey is bot.encryption.pickle_key; empty means the tests' own.
	pickleKey string
}

// newJarvis registers a fresh bot user, writes its config and starts it.
// The dedicated room is created by Jarvis, with the admins invited.
func newJarvis(t testing.TB, opts options) *jarvis {
	t.Helper()
	ctx := context.Background()
	server := hs
	if opts.hs != nil {
		server = opts.hs
	}
	localpart := tesths.RandomName("jarvis")
	cli, err := server.Register(ctx, localpart, "jarvis-password")
	if err != nil {
		t.Fatal(err)
	}
	if opts.displayName != "" {
		if err := cli.SetDisplayName(ctx, opts.displayName); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	j := &jarvis{
		t:       t,
		UserID:  server.UserID(localpart),
		Alias:   "#" + tesths.RandomName("room") + ":localhost",
		cfgPath: filepath.Join(dir, "config.yaml"),
		env:     opts.env,
	}
	j.setHost(opts.host)
	if opts.allowed == nil {
		opts.allowed = []string{"@*:localhost"}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "homeserver:\n  url: %s\n", server.URL)
	fmt.Fprintf(&b, "bot:\n  user_id: %q\n  password: jarvis-password\n  room: %q\n", j.UserID, j.Alias)
	b.WriteString("  admins:\n")
	for _, a := range opts.admins {
		fmt.Fprintf(&b, "    - %q\n", a)
	}
	b.WriteString("  allowed_users:\n")
	for _, a := range opts.allowed {
		fmt.Fprintf(&b, "    - %q\n", a)
	}
	if opts.pickleKey == "" {
		opts.pickleKey = "integration-pickle-key-of-32-characters"
	}
	fmt.Fprintf(&b, "  encryption:\n    # Never change it.\n    pickle_key: %s\n", opts.pickleKey)
	if opts.plaintext {
		b.WriteString("    enabled: false\n")
	}
	if opts.store.Type != "" {
		j.Store = opts.store
		fmt.Fprintf(&b, "store:\n  type: %s\n  uri: %q\n", opts.store.Type, opts.store.URI)
	} else {
		j.Store = testdb.NewConfig(t, store.SQLite)
		fmt.Fprintf(&b, "store:\n  uri: %s\n", j.Store.URI)
	}
	b.WriteString("logging:\n  level: debug\n  format: json\n")
	if !strings.Contains(opts.extra, "chat:") {
		// Test people type far faster than people do; the sender limit has
		// tests of its own, which set it.
		b.WriteString("chat:\n  sender_limit:\n    per_second: 100\n    burst: 100\n")
	}
	b.WriteString(opts.extra)
	if err := os.WriteFile(j.cfgPath, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	j.Start()
	t.Cleanup(func() {
		if t.Failed() {
			j.dumpGoroutines()
		}
		j.Stop()
		if t.Failed() {
			t.Logf("jarvis log:\n%s", j.logs.String())
		}
	})
	return j
}

// Start starts the process.
func (j *jarvis) Start() {
	j.t.Helper()
	j.cmd = exec.Command(jarvisBin, "run", "--config", j.cfgPath)
	if j.host != nil {
		j.cmd = j.host.command(jarvisBin, "run", "--config", j.cfgPath)
	}
	j.cmd.Env = append(os.Environ(), j.env...)
	if j.logs == nil {
		j.logs = &syncBuffer{}
	}
	j.cmd.Stdout, j.cmd.Stderr = j.logs, j.logs
	if err := j.cmd.Start(); err != nil {
		j.t.Fatal(err)
	}
	j.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(j.cmd, j.exited)
}

// Kill ends the process with SIGKILL, as a crash would.
func (j *jarvis) Kill() {
	_ = j.cmd.Process.Kill()
	<-j.exited
}

// Freeze stops the process with SIGSTOP, as a host that hangs would: it
// keeps its connections and locks and does nothing until Thaw.
// Freeze returns once every thread of the process has stopped: a signal
// is delivered a moment after it is sent, and a thread still running
// then could commit a write.
func (j *jarvis) Freeze() {
	j.t.Helper()
	_ = j.cmd.Process.Signal(syscall.SIGSTOP)
	deadline := time.Now().Add(5 * time.Second)
	for !stopped(j.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			j.t.Fatalf("jarvis (pid %d) did not stop within 5 s of SIGSTOP", j.cmd.Process.Pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// stopped tells whether every thread of a process is stopped by a signal
// (state T in /proc).
func stopped(pid int) bool {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	for _, path := range stats {
		stat, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses.
		if _, rest, _ := strings.Cut(string(stat), ") "); !strings.HasPrefix(rest, "T") {
			return false
		}
	}
	return len(stats) > 0
}

// Thaw resumes a frozen process.
func (j *jarvis) Thaw() { _ = j.cmd.Process.Signal(syscall.SIGCONT) }

// dumpGoroutines ends a running process with SIGQUIT, on which the Go
// runtime writes every goroutine's stack to its log: what each was waiting
// for when a test failed.
func (j *jarvis) dumpGoroutines() {
	select {
	case <-j.exited:
		return
	default:
	}
	_ = j.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-j.exited:
	case <-time.After(5 * time.Second):
	}
}

// Stop ends the process with SIGTERM and waits for it.
func (j *jarvis) Stop() {
	select {
	case <-j.exited:
		return
	default:
	}
	_ = j.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-j.exited:
	case <-time.After(10 * time.Second):
		j.Kill()
	}
}

// joinRoom joins the person to Jarvis's dedicated room and returns the
// room ID once the room is ready to talk in: the person knows it is
// encrypted, and has read Jarvis's encrypted answer to a !ping.
func (j *jarvis) joinRoom(t testing.TB, p *tesths.Person) id.RoomID {
	t.Helper()
	room := j.enter(t, p)
	if _, err := p.Greet(context.Background(), room, j.UserID, "!ping", waitReply); err != nil {
		t.Fatalf("the dedicated room is not ready: %v\n%s", err, j.logs.String())
	}
	return room
}

// joinStranger joins someone Jarvis does not answer to the dedicated room
// and waits until they know it is encrypted and Jarvis is in it.
func (j *jarvis) joinStranger(t testing.TB, p *tesths.Person) id.RoomID {
	t.Helper()
	room := j.enter(t, p)
	if err := p.WaitReady(context.Background(), room, j.UserID, waitReply); err != nil {
		t.Fatalf("the dedicated room is not ready: %v", err)
	}
	return room
}

// enter waits until the person is in Jarvis's dedicated room and returns
// the room ID.
func (j *jarvis) enter(t testing.TB, p *tesths.Person) id.RoomID {
	t.Helper()
	ctx := context.Background()
	// Jarvis creates its room while it starts; on a loaded machine the
	// homeserver can take its time.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resolved, err := p.ResolveAlias(ctx, id.RoomAlias(j.Alias))
		if err == nil {
			if _, err := p.JoinRoomByID(ctx, resolved.RoomID); err == nil {
				return resolved.RoomID
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("could not join %s; jarvis log:\n%s", j.Alias, j.logs.String())
	return ""
}

// replyTo matches Jarvis's reply to a given event.
func (j *jarvis) replyTo(eventID id.EventID) func(*event.Event) bool {
	return func(evt *event.Event) bool {
		if evt.Type != event.EventMessage || evt.Sender != j.UserID {
			return false
		}
		_ = evt.Content.ParseRaw(evt.Type)
		msg := evt.Content.AsMessage()
		return msg.RelatesTo != nil && msg.RelatesTo.GetReplyTo() == eventID
	}
}

// ask has p say text in room and returns Jarvis's reply to it, failing t
// when p cannot send it or no reply comes within waitReply.
func (j *jarvis) ask(t testing.TB, p *tesths.Person, room id.RoomID, text string) *event.Event {
	t.Helper()
	ctx := context.Background()
	sent, err := p.Say(ctx, room, text)
	if err != nil {
		t.Fatalf("%s says %q: %v", p.UserID, text, err)
	}
	reply, err := p.WaitFor(ctx, waitReply, j.replyTo(sent))
	if err != nil {
		t.Fatalf("no reply to %q: %v", text, err)
	}
	return reply
}

// openStore opens a store on the database Jarvis runs on, a second writer
// there as any core service is; it is closed when t ends.
func (j *jarvis) openStore(t testing.TB) *store.Store {
	t.Helper()
	return testdb.OpenConfig(t, j.Store)
}

// newPerson registers a person who syncs until the test ends.
func newPerson(t testing.TB, prefix string) *tesths.Person {
	t.Helper()
	return newPersonOn(t, hs, prefix)
}

// newPersonOn registers a person on h who syncs until the test ends.
func newPersonOn(t testing.TB, h *tesths.Homeserver, prefix string) *tesths.Person {
	t.Helper()
	p, err := h.NewPerson(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// Twin starts a second Jarvis process on the same configuration and
// database, as an operator starting `jarvis run` twice would; env is added
// to its environment (another api.listen, as on a second host).
func (j *jarvis) Twin(t testing.TB, env ...string) *jarvis {
	t.Helper()
	return j.TwinOn(t, nil, env...)
}

// TwinOn starts a Twin on host (here when nil).
func (j *jarvis) TwinOn(t testing.TB, host *host, env ...string) *jarvis {
	t.Helper()
	twin := &jarvis{t: t, UserID: j.UserID, Alias: j.Alias, Store: j.Store, cfgPath: j.cfgPath, env: env}
	twin.setHost(host)
	twin.Start()
	t.Cleanup(func() {
		if t.Failed() {
			twin.dumpGoroutines()
		}
		twin.Stop()
		if t.Failed() {
			t.Logf("twin jarvis log:\n%s", twin.logs.String())
		}
	})
	return twin
}

// setHost makes the process run on host, reaching the homeserver and the
// database through its link.
func (j *jarvis) setHost(h *host) {
	if h == nil {
		return
	}
	j.host = h
	j.env = append(j.env, "JARVIS_HOMESERVER_URL="+h.hsURL, "JARVIS_STORE_URI="+h.dbURI)
}
