package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testport"
)

// cardAPIListen returns a free loopback address for api.listen.
func cardAPIListen(t testing.TB) string {
	t.Helper()
	addr, err := testport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// cardAPI is the orchestrator and the worker agents calling Jarvis's HTTP
// API.
type cardAPI struct {
	t      testing.TB
	base   string
	tokens roleTokens
}

// call sends a request with the token of whoever makes it (roleTokens.forRoute;
// the agent the body names, for an agent's reports) and decodes the JSON
// answer into out, failing the test unless the status is want.
func (a cardAPI) call(method, path string, headers map[string]string, body any, want int, out any) {
	a.t.Helper()
	token := a.tokens.forRoute(method, path, body)
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		a.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			a.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

// waitUp waits until the API answers.
func (a cardAPI) waitUp() {
	a.t.Helper()
	// As agentAPI.waitUp: Jarvis listens once it is in its room.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(a.base + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.t.Fatalf("the API at %s never answered", a.base)
}

type apiCard struct {
	ID          string `json:"id"`
	Ref         string `json:"ref"`
	Goal        string `json:"goal"`
	Author      string `json:"author"`
	RatifiedBy  string `json:"ratified_by"`
	SourceTrust string `json:"source_trust"`
	State       string `json:"state"`
	Revision    int    `json:"revision"`
	Amendments  []struct {
		Kind    string `json:"kind"`
		Option  int    `json:"option"`
		Author  string `json:"author"`
		Network string `json:"network"`
		Text    string `json:"text"`
	} `json:"amendments"`
}

// TestCards: a worker's needs-decision reaches the room with its option
// reactions, and the answer (a tap, or a reply with the option's text)
// goes back to the worker as an answer amendment; a person drafts a card
// set in chat and publishes it with ✅.
func TestCards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	addr := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\n", addr, worker)})
	room := j.joinRoom(t, alice)
	api := cardAPI{t: t, base: "http://" + addr, tokens: j.issueTokens(t, worker)}
	api.waitUp()

	var set struct {
		Cards []struct {
			ID string `json:"id"`
		} `json:"cards"`
	}
	api.call("POST", "/api/cardsets", map[string]string{"Idempotency-Key": "card-test-set"}, map[string]any{
		"cards": []map[string]any{
			{"ref": "db", "goal": "Pick the report store", "acceptance": []string{"a store is chosen"}, "priority": "P2"},
			{"ref": "fmt", "goal": "Pick the export format", "acceptance": []string{"a format is chosen"}, "priority": "P2"},
		},
	}, http.StatusOK, &set)
	if len(set.Cards) != 2 {
		t.Fatalf("published %d cards, want 2", len(set.Cards))
	}

	// ask claims a card as a worker, raises a question on it, and returns
	// the relay message once it is in the room with its option reactions.
	ask := func(t *testing.T, cardID, question string, options []string) *event.Event {
		t.Helper()
		api.call("POST", "/api/cards/"+cardID+"/state", nil, map[string]string{"state": "claimed"}, http.StatusOK, nil)
		api.call("POST", "/api/cards/"+cardID+"/needs-decision", nil, map[string]any{
			"question": question, "options": options,
			"checkpoint": map[string]string{"branch": "feat/" + cardID, "note": "pushed the groundwork"},
		}, http.StatusCreated, nil)
		relay, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), question)
		})
		if err != nil {
			t.Fatalf("the question never reached the room: %v", err)
		}
		body := tesths.Body(relay)
		for i, o := range options {
			if !strings.Contains(body, fmt.Sprintf("%d. %s", i+1, o)) {
				t.Errorf("the relay lacks option line %d. %s:\n%s", i+1, o, body)
			}
			emoji := string(rune('1'+i)) + "\ufe0f\u20e3"
			if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, relay.ID, emoji)); err != nil {
				t.Errorf("no %s on the relay: %v", emoji, err)
			}
		}
		return relay
	}
	// answered waits for the relay's edit and returns the card as the
	// worker reads it afterwards.
	answered := func(t *testing.T, cardID string, relay *event.Event) apiCard {
		t.Helper()
		edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, relay.ID))
		if err != nil {
			t.Fatalf("the relay was never edited: %v", err)
		}
		if body := newBody(edit); !strings.Contains(body, "Answered by "+alice.UserID.String()) || !strings.Contains(body, "2. Use Postgres") {
			t.Errorf("the relay was edited into:\n%s", body)
		}
		var card apiCard
		api.call("GET", "/api/cards/"+cardID, nil, nil, http.StatusOK, &card)
		return card
	}
	wantAnswer := func(t *testing.T, card apiCard) {
		t.Helper()
		if len(card.Amendments) == 0 {
			t.Fatalf("card %s has no amendments", card.ID)
		}
		a := card.Amendments[len(card.Amendments)-1]
		if a.Kind != "answer" || a.Option != 2 || a.Author != alice.UserID.String() || a.Network != "matrix" ||
			!strings.Contains(a.Text, "Resume from branch feat/"+card.ID) {
			t.Errorf("last amendment = %+v, want alice's answer 2 from matrix with the checkpoint", a)
		}
		if card.State != "published" || card.Revision != 2 {
			t.Errorf("card is %s at revision %d, want published again at revision 2", card.State, card.Revision)
		}
	}
	options := []string{"Use SQLite", "Use Postgres", "Ask me later"}

	t.Run("a tap on 2️⃣ answers", func(t *testing.T) {
		cardID := set.Cards[0].ID
		relay := ask(t, cardID, "Which database should reports live in?", options)
		if _, err := alice.SendReaction(ctx, room, relay.ID, "2️⃣"); err != nil {
			t.Fatal(err)
		}
		wantAnswer(t, answered(t, cardID, relay))
	})

	t.Run("a reply with the option's text answers", func(t *testing.T) {
		cardID := set.Cards[1].ID
		relay := ask(t, cardID, "Where should exported reports be stored?", options)
		_, err := alice.SendMessageEvent(ctx, room, event.EventMessage, &event.MessageEventContent{
			MsgType: event.MsgText, Body: "use postgres",
			RelatesTo: &event.RelatesTo{InReplyTo: &event.InReplyTo{EventID: relay.ID}},
		})
		if err != nil {
			t.Fatal(err)
		}
		wantAnswer(t, answered(t, cardID, relay))
	})

	t.Run("a draft set published from chat with ✅", func(t *testing.T) {
		for _, text := range []string{
			`!card draft Write the report parser --accept "parses every sample report" --priority P2`,
			`!card draft Wire the parser into the CLI --accept “the CLI prints parsed reports” --priority P3 --depends d1`,
		} {
			if body := tesths.Body(j.ask(t, alice, room, text)); !strings.HasPrefix(body, "Added d") {
				t.Fatalf("%s\nwas answered: %s", text, body)
			}
		}
		question := j.ask(t, alice, room, "!card publish")
		if body := tesths.Body(question); !strings.Contains(body, "1. d1 — Write the report parser (P2)") ||
			!strings.Contains(body, "2. d2 — Wire the parser into the CLI (P3, after d1)") {
			t.Errorf("the publish question reads:\n%s", body)
		}
		if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, question.ID, "✅")); err != nil {
			t.Fatalf("no ✅ on the question: %v", err)
		}
		if _, err := alice.SendReaction(ctx, room, question.ID, "✅"); err != nil {
			t.Fatal(err)
		}
		edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, question.ID))
		if err != nil {
			t.Fatalf("the question was never edited: %v", err)
		}
		published := strings.Fields(strings.TrimPrefix(strings.SplitN(newBody(edit), "\n", 2)[0], "Published:"))
		if len(published) != 2 {
			t.Fatalf("the question was edited into:\n%s", newBody(edit))
		}

		var list struct {
			Cards []apiCard `json:"cards"`
		}
		api.call("GET", "/api/cards", nil, nil, http.StatusOK, &list)
		found := 0
		for _, c := range list.Cards {
			if c.ID != published[0] && c.ID != published[1] {
				continue
			}
			found++
			if c.Author != "main-agent" || c.RatifiedBy != alice.UserID.String() || c.State != "published" {
				t.Errorf("card %s (%s): author %s, ratified by %q, %s; want main-agent, alice, published",
					c.ID, c.Goal, c.Author, c.RatifiedBy, c.State)
			}
		}
		if found != 2 {
			t.Errorf("GET /api/cards shows %d of the cards %v", found, published)
		}
	})

	t.Run("!sys clear drops the room's drafts", func(t *testing.T) {
		j.ask(t, alice, room, `!card draft Something for later --accept "it is done" --priority P3`)
		question := j.ask(t, alice, room, "!sys clear")
		if _, err := alice.SendReaction(ctx, room, question.ID, "✅"); err != nil {
			t.Fatal(err)
		}
		edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, question.ID))
		if err != nil {
			t.Fatalf("the clear question was never edited: %v", err)
		}
		if body := newBody(edit); !strings.Contains(body, "1 draft card") {
			t.Errorf("clear said:\n%s", body)
		}
		if body := tesths.Body(j.ask(t, alice, room, "!card show-draft")); !strings.Contains(body, "You have no draft cards") {
			t.Errorf("after the clear, show-draft says:\n%s", body)
		}
	})
}
