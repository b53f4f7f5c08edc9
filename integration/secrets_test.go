package integration

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestSecretsNeverLeave runs a scripted session — `!sys status`, a link
// confirmed with ✅, a tripwire armed, a personal and an API token made in
// chat, a worker's question relayed and answered, `!sys status` again —
// then reads every event Jarvis put in each room back from the homeserver
// and every line it logged, and fails on any configured secret: the
// homeserver password, the pickle key, the store's password (on
// PostgreSQL), the API tokens issued for the run, and each token made in
// chat anywhere but in the one message that showed it. Jarvis runs with
// encryption off here, so that what the homeserver holds is readable.
func TestSecretsNeverLeave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	listen := cardAPIListen(t)
	opts := options{admins: []id.UserID{alice.UserID}, plaintext: true,
		extra: "fleet:\n  agents:\n    - name: " + worker + "\napi:\n  listen: " + listen + "\n"}
	secrets := map[string]string{"the homeserver password": "jarvis-password", "the pickle key": "integration-pickle-key-of-32-characters"}
	if os.Getenv(testdb.EnvPostgres) != "" {
		cfg := testdb.NewConfig(t, store.Postgres)
		u, err := url.Parse(cfg.URI)
		if err != nil {
			t.Fatal(err)
		}
		// The test server trusts every local connection, so the password
		// is never checked, only carried in the URI like a real one.
		password := tesths.RandomName("pg-secret-")
		u.User = url.UserPassword(u.User.Username(), password)
		cfg.URI = u.String()
		opts.store = cfg
		secrets["the store's password"] = password
	}
	j := newJarvis(t, opts)
	room := j.enter(t, alice)
	j.ask(t, alice, room, "!ping")
	dm := j.directRoom(t, alice)
	tokens := j.issueTokens(t, worker)
	secrets["the agent token"] = tokens.agent[worker]
	secrets["the supervisor token"] = tokens.supervisor
	secrets["the orchestrator token"] = tokens.orchestrator
	api := cardAPI{t: t, base: "http://" + listen, tokens: tokens}
	api.waitUp()

	if body := tesths.Body(j.ask(t, alice, room, "!sys status")); !strings.Contains(body, "SQLite") && !strings.Contains(body, "PostgreSQL") {
		t.Errorf("!sys status says %q", body)
	}
	puppet, err := bridgeAS.Puppet(ctx, hs, tesths.RandomName("telegram_"))
	if err != nil {
		t.Fatal(err)
	}
	chat := bridgedChat(t, alice, j, puppet)
	waitJoined(t, alice, chat, puppet.UserID)
	j.sayThrough(t, alice, puppet, chat, "!link "+alice.UserID.String())
	question, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(dm, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "asks to be linked")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendReaction(ctx, dm, question.ID, "✅"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, question.ID)); err != nil {
		t.Fatalf("the link was not confirmed: %v", err)
	}
	if body := tesths.Body(j.sayThrough(t, alice, puppet, chat, `!tw arm agent.status eq offline --param EVE --because "EVE runs the nightly build"`)); !strings.Contains(body, "Armed") {
		t.Fatalf("arming got %q", body)
	}

	// Tokens made in chat: each may appear in the message that shows it,
	// and nowhere else.
	shown := map[id.EventID]bool{}
	made := func(say, label string, pattern *regexp.Regexp) {
		t.Helper()
		reply := j.ask(t, alice, dm, say)
		token := pattern.FindString(tesths.Body(reply))
		if token == "" {
			t.Fatalf("%s showed no token: %q", say, tesths.Body(reply))
		}
		secrets[label] = token
		shown[reply.ID] = true
	}
	made("!tw token laptop", "the personal token", regexp.MustCompile(`jtw_[A-Za-z0-9_-]+`))
	made("!sys token issue supervisor", "the API token issued in chat", regexp.MustCompile(`jat_[A-Za-z0-9_-]+`))

	var set struct {
		Cards []struct {
			ID string `json:"id"`
		} `json:"cards"`
	}
	api.call("POST", "/api/cardsets", map[string]string{"Idempotency-Key": "secrets-set"}, map[string]any{
		"cards": []map[string]any{{"goal": "Rotate the keys", "acceptance": []string{"old keys refused"}, "priority": "P2"}},
	}, http.StatusOK, &set)
	cardID := set.Cards[0].ID
	api.call("POST", "/api/cards/"+cardID+"/state", nil, map[string]string{"state": "claimed"}, http.StatusOK, nil)
	api.call("POST", "/api/cards/"+cardID+"/needs-decision", nil, map[string]any{
		"question": "Now or tonight?", "options": []string{"Now", "Tonight"},
		"checkpoint": map[string]string{"branch": "feat/keys", "note": "ready"},
	}, http.StatusCreated, nil)
	relay, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "Now or tonight?")
	})
	if err != nil {
		t.Fatal(err)
	}
	replyTo(t, alice.Client, room, relay.ID, "2")
	if _, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, relay.ID)); err != nil {
		t.Fatalf("the question was not answered: %v", err)
	}
	j.ask(t, alice, room, "!sys status")

	var sent []*event.Event
	for _, r := range []id.RoomID{room, dm, chat} {
		events, err := alice.FromServer(ctx, r, j.UserID)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, events...)
	}
	if len(sent) < 15 {
		t.Fatalf("read only %d events of Jarvis back from the homeserver", len(sent))
	}
	// The scan reads what the homeserver holds: the messages that showed
	// the tokens hold them there.
	for _, label := range []string{"the personal token", "the API token issued in chat"} {
		if !slices.ContainsFunc(sent, func(evt *event.Event) bool {
			return shown[evt.ID] && strings.Contains(string(evt.Content.VeryRaw), secrets[label])
		}) {
			t.Fatalf("%s is not in the message that showed it, as the homeserver holds it: the scan reads nothing", label)
		}
	}
	logs := j.logs.String()
	if !strings.Contains(logs, "Holding the workspace lease") {
		t.Fatal("the log scanned is not Jarvis's")
	}
	for what, secret := range secrets {
		for _, evt := range sent {
			if strings.Contains(string(evt.Content.VeryRaw), secret) && !shown[evt.ID] {
				t.Errorf("%s is in Jarvis's event %s in %s: %s", what, evt.ID, evt.RoomID, evt.Content.VeryRaw)
			}
		}
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("%s is in Jarvis's log: %s", what, line)
			}
		}
	}
}
