// Command jarvis-demo shows Jarvis doing its job: it starts a real
// homeserver, Jarvis, and a scripted person who talks to it, and prints
// the conversation as it happens.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/tesths"
)

// script is what the person says, in order.
var script = []string{
	"!ping",
	"!help",
	"!help ping",
	"!nonsense",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "jarvis-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	step("Starting the homeserver (Dendrite on 127.0.0.1)")
	hs, err := tesths.Start(filepath.Join(dir, "homeserver"))
	if err != nil {
		return err
	}
	defer hs.Stop()
	step("Homeserver at " + hs.URL)

	aliceClient, err := hs.Register(ctx, "alice", "alice-password")
	if err != nil {
		return err
	}
	alice := tesths.Watch(aliceClient)
	defer alice.Stop()
	if _, err := hs.Register(ctx, "jarvis", "jarvis-password"); err != nil {
		return err
	}
	jarvisID := hs.UserID("jarvis")

	step("Building and starting Jarvis")
	bin := filepath.Join(dir, "jarvis")
	root, _ := tesths.RepoRoot()
	build := exec.CommandContext(ctx, "go", "build", "-tags", "goolm", "-o", bin, "./cmd/jarvis")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build jarvis: %w\n%s", err, out)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf(`homeserver:
  url: %s
bot:
  user_id: "%s"
  password: jarvis-password
  room: "#jarvis:localhost"
  admins: ["%s"]
  allowed_users: ["@*:localhost"]
store:
  uri: %s
logging:
  format: json
  level: warn
`, hs.URL, jarvisID, alice.UserID, filepath.Join(dir, "jarvis.db"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	jarvis := exec.Command(bin, "run", "--config", cfgPath)
	logFile, err := os.Create(filepath.Join(dir, "jarvis.log"))
	if err != nil {
		return err
	}
	jarvis.Stdout, jarvis.Stderr = logFile, logFile
	if err := jarvis.Start(); err != nil {
		return err
	}
	defer func() {
		_ = jarvis.Process.Signal(syscall.SIGTERM)
		_ = jarvis.Wait()
	}()

	room, err := joinWhenReady(ctx, alice)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("%s is in the dedicated room %s with Jarvis\n", alice.UserID, room))

	for _, line := range script {
		say(alice.UserID, line)
		sent, err := alice.Say(ctx, room, line)
		if err != nil {
			return err
		}
		reply, err := alice.WaitFor(ctx, 20*time.Second, func(evt *event.Event) bool {
			if evt.Sender != jarvisID || evt.Type != event.EventMessage {
				return false
			}
			msg := evt.Content.AsMessage()
			return msg.RelatesTo != nil && msg.RelatesTo.GetReplyTo() == sent
		})
		if err != nil {
			return fmt.Errorf("jarvis did not answer %q: %w", line, err)
		}
		say(jarvisID, tesths.Body(reply))
	}
	step("Done: every line was answered by Jarvis through the real homeserver.")
	return nil
}

func joinWhenReady(ctx context.Context, p *tesths.Person) (id.RoomID, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resolved, err := p.ResolveAlias(ctx, "#jarvis:localhost"); err == nil {
			if _, err := p.JoinRoomByID(ctx, resolved.RoomID); err == nil {
				return resolved.RoomID, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return "", fmt.Errorf("jarvis never created #jarvis:localhost")
}

func step(s string) { fmt.Printf("\033[2m== %s\033[0m\n", s) }

func say(who id.UserID, text string) {
	name := strings.TrimPrefix(strings.SplitN(who.String(), ":", 2)[0], "@")
	lines := strings.Split(strings.TrimSpace(text), "\n")
	fmt.Printf("\033[1m%-8s\033[0m %s\n", name+":", lines[0])
	for _, l := range lines[1:] {
		fmt.Printf("%-8s %s\n", "", l)
	}
}
