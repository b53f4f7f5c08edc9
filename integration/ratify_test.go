package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// bridgedChat is a Telegram chat bridged into Matrix, created by owner as
// a bridge creates a portal: bridge info naming the relay bot, room
// features that forbid reactions, Jarvis invited, and members (puppets,
// the relay bot) joined.
func bridgedChat(t *testing.T, owner *tesths.Person, j *jarvis, members ...*mautrix.Client) id.RoomID {
	t.Helper()
	ctx := context.Background()
	relayBot := id.NewUserID(bridgeAS.BotLocalpart, "localhost")
	invite := []id.UserID{j.UserID}
	for _, m := range members {
		invite = append(invite, m.UserID)
	}
	created, err := owner.CreateRoom(ctx, &mautrix.ReqCreateRoom{
		Name: "Telegram chat", Preset: "private_chat", Invite: invite,
		InitialState: []*event.Event{
			{Type: event.StateBridge, StateKey: ptr(""), Content: event.Content{Raw: map[string]any{
				"bridgebot": relayBot.String(), "protocol": map[string]any{"id": "telegram", "displayname": "Telegram"},
				"channel": map[string]any{"id": "chat-1"}}}},
			{Type: event.StateBeeperRoomFeatures, StateKey: ptr(""), Content: event.Content{Raw: map[string]any{"reaction": -2}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if _, err := m.JoinRoomByID(ctx, created.RoomID); err != nil {
			t.Fatal(err)
		}
	}
	waitJoined(t, owner, created.RoomID, j.UserID)
	return created.RoomID
}

// sayThrough sends text to room as cli (a puppet, a relay bot, a person
// without a sync of their own) and returns Jarvis's reply, as watcher, a
// member of the room, sees it.
func (j *jarvis) sayThrough(t *testing.T, watcher *tesths.Person, cli *mautrix.Client, room id.RoomID, text string) *event.Event {
	t.Helper()
	resp, err := cli.SendText(context.Background(), room, text)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := watcher.WaitFor(context.Background(), waitReply, j.replyTo(resp.EventID))
	if err != nil {
		t.Fatalf("no reply to %q: %v", text, err)
	}
	return reply
}

// TestBridgedCardsWaitForRatification: a puppet linked to nobody drafts
// and publishes cards through the bridge; they wait for ratification and
// a worker cannot claim them over the API; a second bridged person's
// `!card ratify` is refused and changes nothing; the admin's Matrix
// account ratifies, and the worker can claim the card.
func TestBridgedCardsWaitForRatification(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	listen := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: "fleet:\n  agents:\n    - name: " + worker + "\napi:\n  listen: " + listen + "\n"})
	dedicated := j.joinRoom(t, alice)
	api := cardAPI{t: t, base: "http://" + listen, tokens: j.issueTokens(t, worker)}
	api.waitUp()
	var puppets []*mautrix.Client
	for range 2 {
		p, err := bridgeAS.Puppet(ctx, hs, tesths.RandomName("telegram_"))
		if err != nil {
			t.Fatal(err)
		}
		puppets = append(puppets, p)
	}
	drafter, other := puppets[0], puppets[1]
	room := bridgedChat(t, alice, j, drafter, other)
	for _, p := range puppets {
		waitJoined(t, alice, room, p.UserID)
	}
	say := func(cli *mautrix.Client, text string) *event.Event {
		t.Helper()
		return j.sayThrough(t, alice, cli, room, text)
	}

	if body := tesths.Body(say(drafter, `!card draft Rotate the signing keys --accept "old keys are refused" --priority P2`)); !strings.Contains(body, "Added") {
		t.Fatalf("draft: %q", body)
	}
	question := say(drafter, "!card publish")
	if body := tesths.Body(question); !strings.Contains(body, "to wait for a Matrix account to ratify") {
		t.Errorf("the publish question says %q", body)
	}
	replyTo(t, drafter, room, question.ID, "publish")
	edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, question.ID))
	if err != nil {
		t.Fatalf("publishing was not confirmed: %v", err)
	}
	if body := newBody(edit); !strings.Contains(body, "Published, waiting for ratification") || !strings.Contains(body, "card ratify") {
		t.Errorf("the publish edit says %q", body)
	}

	var waiting, backlog struct{ Cards []apiCard }
	api.call("GET", "/api/cards?state=awaiting_ratification", nil, nil, http.StatusOK, &waiting)
	if len(waiting.Cards) != 1 || waiting.Cards[0].SourceTrust != "bridged" || waiting.Cards[0].RatifiedBy != "" {
		t.Fatalf("cards awaiting ratification: %+v, want one, bridged, ratified by nobody", waiting.Cards)
	}
	cardID := waiting.Cards[0].ID
	api.call("GET", "/api/cards?state=published", nil, nil, http.StatusOK, &backlog)
	if len(backlog.Cards) != 0 {
		t.Errorf("%d cards on the backlog after a bridged publish, want 0", len(backlog.Cards))
	}
	claim := map[string]string{"state": "claimed"}
	api.call("POST", "/api/cards/"+cardID+"/state", nil, claim, http.StatusConflict, nil)

	if body := tesths.Body(say(other, "!card ratify "+cardID)); !strings.Contains(body, "Ratify from your Matrix account") {
		t.Errorf("a second bridged person's ratify got %q", body)
	}
	var after apiCard
	api.call("GET", "/api/cards/"+cardID, nil, nil, http.StatusOK, &after)
	if after.State != "awaiting_ratification" || after.RatifiedBy != "" || after.Revision != 1 {
		t.Fatalf("after the refused ratify the card is %s, ratified by %q, revision %d", after.State, after.RatifiedBy, after.Revision)
	}
	api.call("POST", "/api/cards/"+cardID+"/state", nil, claim, http.StatusConflict, nil)

	if body := tesths.Body(j.ask(t, alice, dedicated, "!card ratify "+cardID)); !strings.Contains(body, "Ratified card "+cardID) {
		t.Fatalf("the admin's ratify got %q", body)
	}
	api.call("POST", "/api/cards/"+cardID+"/state", nil, claim, http.StatusOK, nil)
	api.call("GET", "/api/cards/"+cardID, nil, nil, http.StatusOK, &after)
	if after.State != "claimed" || after.RatifiedBy != alice.UserID.String() || after.SourceTrust != "bridged" {
		t.Errorf("after ratifying and claiming: %s, ratified by %q, trust %s", after.State, after.RatifiedBy, after.SourceTrust)
	}
}

// directRoom has p open a direct room with Jarvis and waits until Jarvis
// answers there, so Jarvis knows it as p's direct room.
func (j *jarvis) directRoom(t *testing.T, p *tesths.Person) id.RoomID {
	t.Helper()
	ctx := context.Background()
	created, err := p.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: true, Invite: []id.UserID{j.UserID}})
	if err != nil {
		t.Fatal(err)
	}
	waitJoined(t, p, created.RoomID, j.UserID)
	if body := tesths.Body(j.ask(t, p, created.RoomID, "!ping")); !strings.Contains(body, "pong") {
		t.Fatalf("no pong in the direct room: %q", body)
	}
	return created.RoomID
}

// TestLinkWithoutACode: a puppet with no direct room with Jarvis asks to
// be linked in a bridged group; Alice confirms with ✅ in her own direct
// room. From Matrix, `!link telegram:<handle>` finds, through the
// homeserver's user directory, the one puppet in a room with Jarvis that a
// display name names, and refuses an unknown or ambiguous handle.
func TestLinkWithoutACode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	j.joinRoom(t, alice)
	dm := j.directRoom(t, alice)
	names := map[string]string{"asker": "", "carol": tesths.RandomName("carol_"), "dup1": tesths.RandomName("dup_")}
	names["dup2"] = names["dup1"]
	puppets := map[string]*mautrix.Client{}
	for who, name := range names {
		p, err := bridgeAS.Puppet(ctx, hs, tesths.RandomName("telegram_"))
		if err != nil {
			t.Fatal(err)
		}
		if name != "" {
			if err := p.SetDisplayName(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		puppets[who] = p
	}
	asker := puppets["asker"]
	room := bridgedChat(t, alice, j, asker, puppets["carol"], puppets["dup1"], puppets["dup2"])
	for _, p := range puppets {
		waitJoined(t, alice, room, p.UserID)
	}

	reply := tesths.Body(j.sayThrough(t, alice, asker, room, "!link "+alice.UserID.String()))
	if !strings.Contains(reply, "I asked "+alice.UserID.String()+" to confirm in their direct room") || strings.Contains(reply, "code is") {
		t.Fatalf("asking from a puppet without a direct room got %q", reply)
	}
	question, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(dm, j.UserID)(evt) && strings.Contains(tesths.Body(evt), asker.UserID.String()+" on telegram asks to be linked")
	})
	if err != nil {
		t.Fatalf("no question in Alice's direct room: %v", err)
	}
	if _, err := alice.SendReaction(ctx, dm, question.ID, "✅"); err != nil {
		t.Fatal(err)
	}
	edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, question.ID))
	if err != nil || !strings.Contains(newBody(edit), "Linked: "+asker.UserID.String()+" on telegram is "+alice.UserID.String()) {
		t.Fatalf("Alice's ✅ did not link: %v", err)
	}
	if account, err := j.openStore(t).LinkedAccount(ctx, asker.UserID.String()); err != nil || account != alice.UserID.String() {
		t.Errorf("the link stored is %q (%v)", account, err)
	}

	tests := []struct {
		name, say, want string
	}{
		{"a handle naming one puppet", "!link telegram:@" + names["carol"], "Your link code is"},
		{"an unknown handle", "!link telegram:" + tesths.RandomName("nobody_"), "I know no telegram account"},
		{"an ambiguous handle", "!link telegram:" + names["dup1"], "names 2 telegram accounts"},
		{"an unknown network", "!link myspace:" + names["carol"], "I know no bridged network myspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if body := tesths.Body(j.ask(t, alice, dm, tt.say)); !strings.Contains(body, tt.want) {
				t.Errorf("%s got %q, want %q", tt.say, body, tt.want)
			}
		})
	}
	if body := tesths.Body(j.ask(t, alice, dm, "!link telegram:"+names["carol"])); !strings.Contains(body, "from "+puppets["carol"].UserID.String()) {
		t.Errorf("the code is not bound to carol's puppet: %q", body)
	}
}
