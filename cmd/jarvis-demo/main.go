// Command jarvis-demo shows Jarvis doing its job: it starts a real
// homeserver, Jarvis, a scripted person who talks to it and a scripted
// agent that reports to it, and prints the conversation as it happens.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/client"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testport"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// demo is one run: the homeserver, Jarvis, Alice in the room, and the API
// an agent calls.
type demo struct {
	ctx    context.Context
	alice  *tesths.Person
	jarvis id.UserID
	room   id.RoomID
	api    string
	// agents are the API clients by holder (the client package): the
	// agents EVE, ZEUS and HERMES and the supervisor, each with its token
	// from `jarvis token issue`.
	agents map[string]*client.Client
	// hs and bridge make Alice's Telegram account: a puppet of a test
	// application service, as a mautrix bridge makes it.
	hs     *tesths.Homeserver
	bridge *tesths.Appservice
	err    error
}

func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "jarvis-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	step("Starting the homeserver (Dendrite on 127.0.0.1), with a Telegram bridge's application service")
	bridge, err := tesths.NewAppservice(filepath.Join(dir, "appservice"), "telegram_")
	if err != nil {
		return err
	}
	defer bridge.Close()
	hs, err := tesths.Start(filepath.Join(dir, "homeserver"), bridge.Env())
	if err != nil {
		return err
	}
	defer hs.Stop()
	step("Homeserver at " + hs.URL)

	aliceClient, err := hs.Register(ctx, "alice", "alice-password")
	if err != nil {
		return err
	}
	// Alice has her own end-to-end encryption: the room Jarvis creates is
	// encrypted, and she reads it as Element would.
	alice, err := tesths.Watch(ctx, aliceClient)
	if err != nil {
		return err
	}
	defer alice.Stop()
	if _, err := hs.Register(ctx, "jarvis", "jarvis-password"); err != nil {
		return err
	}
	d := &demo{ctx: ctx, alice: alice, jarvis: hs.UserID("jarvis"), hs: hs, bridge: bridge}

	step("Building and starting Jarvis")
	bin := filepath.Join(dir, "jarvis")
	root, _ := tesths.RepoRoot()
	build := exec.CommandContext(ctx, "go", "build", "-tags", "goolm", "-o", bin, "./cmd/jarvis")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build jarvis: %w\n%s", err, out)
	}
	listen, err := testport.Addr()
	if err != nil {
		return err
	}
	d.api = "http://" + listen
	// A dead-man's switch of the demo's own on loopback, as Healthchecks
	// would be: Jarvis pings it every two seconds while it is healthy.
	pings := make(chan string, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1000))
		select {
		case pings <- strings.TrimSpace(r.Method + " " + r.URL.Path + " " + string(body)):
		default:
		}
	}))
	defer receiver.Close()
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf(`homeserver:
  url: %s
bot:
  user_id: "%s"
  password: jarvis-password
  room: "#jarvis:localhost"
  admins: ["%s"]
  allowed_users: ["@*:localhost"]
  encryption:
    pickle_key: demo-pickle-key-of-at-least-32-characters
store:
  uri: %s
api:
  listen: %s
fleet:
  agents:
    - name: EVE
      cadence: 24h
    - name: ZEUS
      cadence: 24h
    - name: HERMES
      cadence: %s
tripwires:
  tick: 2s
watchdog:
  ping_url: %s/ping/jarvis-demo
  period: 2s
logging:
  format: json
  level: warn
`, hs.URL, d.jarvis, alice.UserID, filepath.Join(dir, "jarvis.db"), listen, hermesCadence, receiver.URL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	step("Issuing API tokens: agents EVE, ZEUS and HERMES, and the supervisor (jarvis token issue)")
	d.agents = map[string]*client.Client{}
	for holder, args := range map[string][]string{"EVE": {"--role", "agent", "--agent", "EVE"}, "ZEUS": {"--role", "agent", "--agent", "ZEUS"},
		"HERMES": {"--role", "agent", "--agent", "HERMES"}, "supervisor": {"--role", "supervisor"}} {
		out, err := exec.CommandContext(ctx, bin, append([]string{"token", "issue", "--config", cfgPath}, args...)...).CombinedOutput()
		words := strings.Fields(string(out))
		if err != nil || len(words) == 0 {
			return fmt.Errorf("jarvis token issue %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		d.agents[holder] = client.New(d.api, words[len(words)-1])
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
	// HERMES is at work from the start: it reports every second, quietly,
	// until the demo stops it.
	stopHermes := d.keepReporting("HERMES")
	defer func() { stopHermes() }()

	if d.room, err = joinWhenReady(ctx, alice); err != nil {
		return err
	}
	if err := alice.WaitEncrypted(ctx, d.room, 30*time.Second); err != nil {
		return err
	}
	step(fmt.Sprintf("%s is in the dedicated room %s with Jarvis; the room is end-to-end encrypted\n", alice.UserID, d.room))

	d.talk("!ping")
	d.talk("!help")

	step("Jarvis pings a dead-man's switch outside it while it is healthy (watchdog.ping_url, here a receiver on loopback)")
	select {
	case p := <-pings:
		fmt.Printf("\033[2m   the receiver heard: %s\033[0m\n", p)
	case <-time.After(30 * time.Second):
		d.err = fmt.Errorf("no watchdog ping reached the receiver within 30s")
	}

	step("Agent EVE reports a heartbeat over the API; ZEUS never reports")
	d.heartbeat("EVE")
	// HERMES's own loop may not have been heard yet on a busy machine: one
	// heartbeat now makes sure it has reported before it stops.
	d.heartbeat("HERMES")
	d.talk("what's the fleet doing?")

	step("Agent HERMES (a heartbeat every " + hermesCadence + ") stops reporting: two missed heartbeats later Jarvis alerts the room, with 👀 on the alert; Alice taps it to take the alert")
	stopHermes()
	if alert := d.notice("has missed 2 heartbeats"); alert != nil {
		d.tap(alert, "👀")
		step("HERMES reports again: the alert is edited to resolved, and one reply in its thread gives the all-clear")
		d.heartbeat("HERMES")
		d.allClear(alert)
		stopHermes = d.keepReporting("HERMES")
	}

	step("Alice asks, in her own words, to be told when EVE goes offline; one tap arms it")
	d.confirm("let me know if EVE goes offline")
	d.talk("!tw list")

	step("Alice arms a tripwire on EVE's circuit breaker; the answer says what it would have done over the history Jarvis keeps")
	d.talk(`!tw arm breaker.state[EVE] eq open --label "EVE halted" --because "I review every halt" --push`)
	time.Sleep(5 * time.Second) // a few evaluator passes, two seconds apart, read EVE's status
	step("Alice asks about EVE running late: the proposal replays the readings of EVE's status kept so far")
	d.talk("let me know if EVE is late")

	step("The supervisor halts agent EVE through its circuit breaker")
	_, err = d.agents["supervisor"].OpenBreaker(d.ctx, "EVE", client.Breach{Severity: "safety",
		Reason: "tried to run rm -rf outside its sandbox", Evidence: []string{"tool call: rm -rf /srv/shared"}})
	d.did("supervisor", "opens EVE's breaker", err)
	d.notice("HALTED")
	d.talk("!breaker status")
	d.notice("Tripwire tripped: EVE halted")
	d.image()

	step("Alice speaks to Jarvis by name: a question answered from the records, and a reminder for her direct room")
	d.talk("Jarvis, is anything halted?")
	d.talk("Jarvis, remind me in 1 minute to check on EVE")

	step("Alice turns a conversation into a backlog card, published atomically")
	d.talk(`!card draft Add CSV export --accept "every column is exported" --priority P2`)
	d.confirm("!card publish")

	step("Worker ZEUS claims the card and needs a decision; Alice answers with one tap, and ZEUS reads her answer")
	zeus := d.agents["ZEUS"]
	backlog, err := zeus.Cards(d.ctx, "published")
	d.did("ZEUS", "reads the published cards", err)
	if d.err == nil && len(backlog) == 0 {
		d.err = fmt.Errorf("no published card for ZEUS to claim")
	}
	if d.err == nil {
		card := backlog[0].ID
		_, err := zeus.SetCardState(d.ctx, card, "claimed", "")
		d.did("ZEUS", "claims "+card, err)
		_, err = zeus.AskDecision(d.ctx, card, client.Question{Question: "Which separator should the CSV export use?",
			Options: []string{"Comma", "Semicolon"}, Branch: "feat/csv-export", Note: "the exporter writes every column"})
		d.did("ZEUS", "asks which separator", err)
		d.answer("Which separator should the CSV export use?", "2️⃣")
		read, err := zeus.Card(d.ctx, card)
		d.did("ZEUS", "reads the card", err)
		if n := len(read.Amendments); d.err == nil && n > 0 {
			fmt.Printf("\033[2m   ZEUS reads the card's last amendment (%s): %s\033[0m\n", read.Amendments[n-1].Kind, strings.Join(strings.Fields(read.Amendments[n-1].Text), " "))
		}

		step("ZEUS takes the card up again; Alice changes her mind and says NO-GO in plain words, and ZEUS's next heartbeat answer says the card is cancelled")
		_, err = zeus.SetCardState(d.ctx, card, "claimed", "")
		d.did("ZEUS", "claims "+card+" again", err)
		d.talk("Jarvis, stop the CSV export")
		if d.err == nil {
			receipt, err := zeus.Heartbeat(d.ctx, client.Heartbeat{})
			d.did("ZEUS", "heartbeat", err)
			for _, c := range receipt.Cards {
				fmt.Printf("\033[2m   ZEUS's heartbeat answer lists its card %s: %s\033[0m\n", c.ID, c.State)
			}
		}
	}

	step("Alice on Telegram, through the bridge: her puppet arms a tripwire, then links to her Matrix account with a code shown only in its direct room with Jarvis")
	d.link()

	step("A minute after Alice asked, her reminder arrives in her direct room with Jarvis")
	d.reminder("check on EVE")

	step("The operator, at the machine's terminal, asks the same Jarvis through the console: `jarvis console -c '!fleet'`")
	if d.err == nil {
		out, err := exec.CommandContext(ctx, bin, "console", "--config", cfgPath, "-x", "!fleet").CombinedOutput()
		fmt.Print(string(out))
		if err != nil {
			d.err = fmt.Errorf("jarvis console -c '!fleet': %w", err)
		}
	}

	step("Done: every line went through the real homeserver and Jarvis's durable outbox.")
	return d.err
}

// talk says a line as Alice and prints Jarvis's reply.
func (d *demo) talk(line string) *event.Event {
	if d.err != nil {
		return nil
	}
	say(d.alice.UserID, line)
	sent, err := d.alice.Say(d.ctx, d.room, line)
	if err != nil {
		d.err = err
		return nil
	}
	reply, err := d.alice.WaitFor(d.ctx, 20*time.Second, func(evt *event.Event) bool {
		if evt.Sender != d.jarvis || evt.Type != event.EventMessage {
			return false
		}
		msg := evt.Content.AsMessage()
		return msg.RelatesTo != nil && msg.RelatesTo.GetReplyTo() == sent
	})
	if err != nil {
		d.err = fmt.Errorf("jarvis did not answer %q: %w", line, err)
		return nil
	}
	say(d.jarvis, tesths.Body(reply))
	return reply
}

// confirm says a line whose answer Jarvis asks to confirm, taps ✅ as
// Alice, and prints what Jarvis edits the question into.
func (d *demo) confirm(line string) {
	if question := d.talk(line); question != nil {
		d.tap(question, "✅")
	}
}

// tap reacts to Jarvis's message msg with emoji as Alice and prints what
// Jarvis edits the message into.
func (d *demo) tap(msg *event.Event, emoji string) {
	if d.err != nil {
		return
	}
	say(d.alice.UserID, "(reacts "+emoji+")")
	if _, err := d.alice.SendReaction(d.ctx, d.room, msg.ID, emoji); err != nil {
		d.err = err
		return
	}
	edit, err := d.alice.WaitFor(d.ctx, 20*time.Second, func(evt *event.Event) bool {
		return evt.Sender == d.jarvis && evt.Type == event.EventMessage && evt.Content.AsMessage().RelatesTo.GetReplaceID() == msg.ID
	})
	if err != nil {
		d.err = fmt.Errorf("jarvis did not act on the %s: %w", emoji, err)
		return
	}
	say(d.jarvis, "(edits its message) "+edit.Content.AsMessage().NewContent.Body)
}

// answer waits for Jarvis's relay of a worker's question, taps option
// as Alice, and prints what Jarvis edits the relay into.
func (d *demo) answer(question, option string) {
	if d.err != nil {
		return
	}
	relay, err := d.alice.WaitFor(d.ctx, 20*time.Second, func(evt *event.Event) bool {
		return evt.Sender == d.jarvis && evt.Type == event.EventMessage && strings.Contains(tesths.Body(evt), question)
	})
	if err != nil {
		d.err = fmt.Errorf("the question never reached the room: %w", err)
		return
	}
	say(d.jarvis, tesths.Body(relay))
	d.tap(relay, option)
}

// link has Alice's Telegram puppet open a direct room with Jarvis, arm a
// tripwire there and ask for a link code bound to her Matrix account,
// which she then redeems from Matrix: what the puppet owned moves to her.
func (d *demo) link() {
	if d.err != nil {
		return
	}
	puppet, err := d.bridge.Puppet(d.ctx, d.hs, "telegram_alice")
	if err != nil {
		d.err = err
		return
	}
	dm, err := puppet.CreateRoom(d.ctx, &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: true, Invite: []id.UserID{d.jarvis}})
	if err != nil {
		d.err = err
		return
	}
	d.waitIn(puppet, dm.RoomID, func(evt *event.Event) bool {
		return evt.Type == event.StateMember && evt.GetStateKey() == d.jarvis.String() && evt.Content.AsMember().Membership == event.MembershipJoin
	})
	d.puppetSays(puppet, dm.RoomID, `!tw arm agent.status eq offline --param ZEUS --because "ZEUS runs the backups"`)
	asked := d.puppetSays(puppet, dm.RoomID, "!link "+d.alice.UserID.String())
	if d.err != nil {
		return
	}
	code := regexp.MustCompile(`code is ([A-Z2-7]{8})\b`).FindStringSubmatch(asked)
	if code == nil {
		d.err = fmt.Errorf("no link code in %q", asked)
		return
	}
	d.talk("!link " + code[1])
}

// puppetSays sends text as puppet in room and prints it and Jarvis's
// answer, which it returns.
func (d *demo) puppetSays(puppet *mautrix.Client, room id.RoomID, text string) string {
	if d.err != nil {
		return ""
	}
	say(puppet.UserID, text)
	sent, err := puppet.SendText(d.ctx, room, text)
	if err != nil {
		d.err = err
		return ""
	}
	reply := d.waitIn(puppet, room, func(evt *event.Event) bool {
		msg := evt.Content.AsMessage()
		return evt.Sender == d.jarvis && evt.Type == event.EventMessage && msg.RelatesTo.GetReplyTo() == sent.EventID
	})
	if reply == nil {
		return ""
	}
	say(d.jarvis, tesths.Body(reply))
	return tesths.Body(reply)
}

// waitIn reads room's latest events as cli, which does not sync (a
// bridge's puppet), until one matches.
func (d *demo) waitIn(cli *mautrix.Client, room id.RoomID, match func(*event.Event) bool) *event.Event {
	if d.err != nil {
		return nil
	}
	evt, err := tesths.WaitIn(d.ctx, cli, room, 20*time.Second, match)
	if err != nil {
		d.err = fmt.Errorf("waiting for Jarvis in %s: %w", room, err)
	}
	return evt
}

// notice waits for a message of Jarvis's own containing text, prints it
// and returns it.
func (d *demo) notice(text string) *event.Event {
	if d.err != nil {
		return nil
	}
	evt, err := d.alice.WaitFor(d.ctx, 20*time.Second, func(evt *event.Event) bool {
		return evt.Sender == d.jarvis && evt.Type == event.EventMessage && strings.Contains(tesths.Body(evt), text)
	})
	if err != nil {
		d.err = fmt.Errorf("no notice saying %q: %w", text, err)
		return nil
	}
	say(d.jarvis, tesths.Body(evt))
	return evt
}

// allClear waits for Jarvis to edit alert to resolved and to reply in
// its thread, and prints both.
func (d *demo) allClear(alert *event.Event) {
	if d.err != nil {
		return
	}
	edit, err := d.alice.WaitFor(d.ctx, 20*time.Second, func(evt *event.Event) bool {
		msg := evt.Content.AsMessage()
		return evt.Sender == d.jarvis && evt.Type == event.EventMessage && msg.RelatesTo.GetReplaceID() == alert.ID &&
			msg.NewContent != nil && strings.Contains(msg.NewContent.Body, "Resolved")
	})
	if err != nil {
		d.err = fmt.Errorf("the alert was not edited to resolved: %w", err)
		return
	}
	say(d.jarvis, "(edits the alert) "+edit.Content.AsMessage().NewContent.Body)
	reply, err := d.alice.WaitFor(d.ctx, 20*time.Second, func(evt *event.Event) bool {
		return evt.Sender == d.jarvis && evt.Type == event.EventMessage && evt.Content.AsMessage().RelatesTo.GetThreadParent() == alert.ID
	})
	if err != nil {
		d.err = fmt.Errorf("no all-clear in the alert's thread: %w", err)
		return
	}
	say(d.jarvis, "(in the alert's thread) "+tesths.Body(reply))
}

// hermesCadence is how often HERMES is expected to report: short, so
// that its silence is noticed within seconds.
const hermesCadence = "6s"

// heartbeat sends a heartbeat of agent's, as the client package sends
// it, and says so.
func (d *demo) heartbeat(agent string) {
	if d.err == nil {
		d.did(agent, "heartbeat", d.report(d.ctx, agent))
	}
}

// report sends one heartbeat of agent's.
func (d *demo) report(ctx context.Context, agent string) error {
	mii := 0.97
	_, err := d.agents[agent].Heartbeat(ctx, client.Heartbeat{Cycle: "C-284", MII: &mii, Notes: "narrative tripwire check: clean"})
	return err
}

// did shows what an API caller did, and keeps the first error.
func (d *demo) did(holder, what string, err error) {
	if d.err != nil {
		return
	}
	if err != nil {
		d.err = fmt.Errorf("%s %s: %w", holder, what, err)
		return
	}
	fmt.Printf("\033[2m   %s %s over the API\033[0m\n", holder, what)
}

// keepReporting has agent heartbeat every second, quietly, until the
// returned stop is called; stopping twice is stopping once.
func (d *demo) keepReporting(agent string) (stop func()) {
	ctx, cancel := context.WithCancel(d.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_ = d.report(ctx, agent)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// reminder waits, for up to 90 s, for a reminder Jarvis delivers with
// text in it, and prints it.
func (d *demo) reminder(text string) {
	if d.err != nil {
		return
	}
	evt, err := d.alice.WaitFor(d.ctx, 90*time.Second, func(evt *event.Event) bool {
		body := tesths.Body(evt)
		return evt.Sender == d.jarvis && evt.Type == event.EventMessage && strings.Contains(body, "Reminder:") && strings.Contains(body, text)
	})
	if err != nil {
		d.err = fmt.Errorf("no reminder saying %q: %w", text, err)
		return
	}
	say(d.jarvis, "(in the direct room) "+tesths.Body(evt))
}

// image waits for an image of Jarvis's own (a trip's chart) and prints
// what it is and what its body says.
func (d *demo) image() {
	if d.err != nil {
		return
	}
	evt, err := d.alice.WaitFor(d.ctx, 20*time.Second, func(evt *event.Event) bool {
		return evt.Sender == d.jarvis && evt.Type == event.EventMessage && evt.Content.AsMessage().MsgType == event.MsgImage
	})
	if err != nil {
		d.err = fmt.Errorf("no chart: %w", err)
		return
	}
	msg := evt.Content.AsMessage()
	kind := "an image"
	if msg.Info != nil {
		kind = fmt.Sprintf("%s, %d × %d, %d bytes", msg.Info.MimeType, msg.Info.Width, msg.Info.Height, msg.Info.Size)
	}
	if msg.File != nil {
		kind += ", encrypted"
	}
	say(d.jarvis, fmt.Sprintf("(%s in the trip's thread) %s", kind, msg.Body))
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
