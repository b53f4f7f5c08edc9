package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// readable matches an event that arrived encrypted and that the person
// could decrypt.
func readable(match func(*event.Event) bool) func(*event.Event) bool {
	return func(evt *event.Event) bool { return tesths.Encrypted(evt) && match(evt) }
}

// sentEncrypted checks that the person's own message went out encrypted.
func sentEncrypted(t *testing.T, p *tesths.Person, eventID id.EventID) {
	t.Helper()
	if _, err := p.WaitFor(context.Background(), waitReply, func(evt *event.Event) bool {
		return evt.ID == eventID && evt.Type == event.EventEncrypted
	}); err != nil {
		t.Errorf("%s's message %s was not sent encrypted", p.UserID, eventID)
	}
}

// TestEncryptedRoom: the dedicated room is created encrypted; a command,
// a proposal with its reactions and the edit that settles it, and a
// breaker notice with its edit and thread reply are all encrypted and
// read by two people with their own devices; reactions stay in the clear.
func TestEncryptedRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: eve\n", port)})
	room := j.joinRoom(t, alice)
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: bob.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinRoom(t, bob)

	sent, err := alice.Say(ctx, room, "!ping")
	if err != nil {
		t.Fatal(err)
	}
	sentEncrypted(t, alice, sent)
	for _, p := range []*tesths.Person{alice, bob} {
		reply, err := p.WaitFor(ctx, waitReply, readable(j.replyTo(sent)))
		if err != nil {
			t.Fatalf("%s read no encrypted reply to !ping: %v\n%s", p.UserID, err, j.logs.String())
		}
		if body := tesths.Body(reply); !strings.HasPrefix(body, "pong") {
			t.Errorf("reply to !ping = %q, want pong", body)
		}
	}

	t.Run("a proposal, its reactions and its edit", func(t *testing.T) {
		sent, err := alice.Say(ctx, room, "!sys clear")
		if err != nil {
			t.Fatal(err)
		}
		question, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent)))
		if err != nil {
			t.Fatalf("no encrypted question: %v", err)
		}
		for _, key := range []string{"✅", "❌"} {
			reaction, err := bob.WaitFor(ctx, waitReply, reactionBy(j.UserID, question.ID, key))
			if err != nil {
				t.Fatalf("no %s on the question: %v", key, err)
			}
			if tesths.Encrypted(reaction) {
				t.Errorf("the %s reaction was encrypted; reactions stay in the clear", key)
			}
		}
		if _, err := alice.SendReaction(ctx, room, question.ID, "✅"); err != nil {
			t.Fatal(err)
		}
		for _, p := range []*tesths.Person{alice, bob} {
			edit, err := p.WaitFor(ctx, waitReply, readable(editOf(j.UserID, question.ID)))
			if err != nil {
				t.Fatalf("%s read no encrypted edit: %v", p.UserID, err)
			}
			if body := newBody(edit); !strings.Contains(body, "Cleared") {
				t.Errorf("the edit says %q", body)
			}
		}
	})

	t.Run("a notice, its edit and a thread reply", func(t *testing.T) {
		api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t)}
		api.waitUp(t, j)
		code, out := api.call(t, http.MethodPost, "/api/breaker/eve/open", map[string]any{
			"severity": "safety", "reason": "tried to delete the workspace", "evidence": []string{"rm -rf /srv/workspace"},
		})
		if code != http.StatusCreated {
			t.Fatalf("open: %d %v", code, out)
		}
		notice, err := bob.WaitFor(ctx, waitReply, readable(func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "HALTED")
		}))
		if err != nil {
			t.Fatalf("no encrypted halt notice: %v", err)
		}
		if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, notice.ID, "▶️")); err != nil {
			t.Fatalf("no ▶️ on the halt notice: %v", err)
		}
		if _, err := alice.SendReaction(ctx, room, notice.ID, "▶️"); err != nil {
			t.Fatal(err)
		}
		if _, err := bob.WaitFor(ctx, waitReply, readable(func(evt *event.Event) bool {
			return editOf(j.UserID, notice.ID)(evt) && strings.Contains(newBody(evt), "HALF-OPEN")
		})); err != nil {
			t.Fatalf("no encrypted edit to half-open: %v\n%s", err, j.logs.String())
		}
		if _, err := bob.WaitFor(ctx, waitReply, readable(func(evt *event.Event) bool {
			if !tesths.MessageFrom(room, j.UserID)(evt) {
				return false
			}
			rel := evt.Content.AsMessage().RelatesTo
			return rel != nil && rel.GetThreadParent() == notice.ID
		})); err != nil {
			t.Fatalf("no encrypted thread reply: %v\n%s", err, j.logs.String())
		}
	})
}

// jarvisDevices returns Jarvis's devices and their signing keys, as the
// homeserver publishes them, and whether a device carries a signature
// other than its own (the self-signing key's).
func jarvisDevices(t *testing.T, p *tesths.Person, j *jarvis) (map[id.DeviceID]id.Ed25519, bool) {
	t.Helper()
	resp, err := p.QueryKeys(context.Background(), &mautrix.ReqQueryKeys{DeviceKeys: map[id.UserID]mautrix.DeviceIDList{j.UserID: {}}})
	if err != nil {
		t.Fatal(err)
	}
	devices := map[id.DeviceID]id.Ed25519{}
	crossSigned := false
	for deviceID, keys := range resp.DeviceKeys[j.UserID] {
		devices[deviceID] = keys.Keys.GetEd25519(deviceID)
		if len(keys.Signatures[j.UserID]) > 1 {
			crossSigned = true
		}
	}
	if _, ok := resp.MasterKeys[j.UserID]; !ok {
		crossSigned = false
	}
	return devices, crossSigned
}

// TestEncryptionAcrossRestart: a restarted Jarvis keeps its one device and
// its keys, cross-signed on the first start (the recovery key logged
// once), and a person who joined before the restart still reads it.
func TestEncryptionAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	sent, _ := alice.Say(ctx, room, "!ping")
	if _, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("no encrypted pong: %v", err)
	}
	before, crossSigned := jarvisDevices(t, alice, j)
	if len(before) != 1 {
		t.Fatalf("Jarvis has %d devices, want 1: %v", len(before), before)
	}
	if !crossSigned {
		t.Errorf("Jarvis's device is not cross-signed")
	}

	j.Stop()
	j.Start()
	sent, _ = alice.Say(ctx, room, "!ping")
	reply, err := alice.WaitFor(ctx, 30*time.Second, readable(j.replyTo(sent)))
	if err != nil {
		t.Fatalf("no encrypted pong after the restart: %v\n%s", err, j.logs.String())
	}
	if !strings.HasPrefix(tesths.Body(reply), "pong") {
		t.Errorf("reply = %q", tesths.Body(reply))
	}
	after, _ := jarvisDevices(t, alice, j)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("devices after the restart = %v, before %v", after, before)
	}
	if n := strings.Count(j.logs.String(), `"recovery_key"`); n != 1 {
		t.Errorf("the recovery key was logged %d times, want once", n)
	}
}

// TestNewDeviceReadsJarvis: a person who logs in on a new device after
// joining reads Jarvis's next message there.
func TestNewDeviceReadsJarvis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	sent, _ := alice.Say(ctx, room, "!ping")
	if _, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("no encrypted pong: %v", err)
	}

	cli, err := mautrix.NewClient(hs.URL, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Login(ctx, &mautrix.ReqLogin{
		Type:             mautrix.AuthTypePassword,
		Identifier:       mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: alice.UserID.String()},
		Password:         "person-password",
		StoreCredentials: true,
	}); err != nil {
		t.Fatal(err)
	}
	phone, err := tesths.Watch(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(phone.Stop)
	if err := phone.WaitEncrypted(ctx, room, 20*time.Second); err != nil {
		t.Fatal(err)
	}

	sent, _ = alice.Say(ctx, room, "!ping")
	if _, err := phone.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("the new device cannot read Jarvis's reply: %v\n%s", err, j.logs.String())
	}
}

// TestUndecryptableMessage: a message encrypted with a session Jarvis
// never received is logged with its session and sender, and answered
// once, in clear words, after Jarvis asked for the keys and waited.
func TestUndecryptableMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	sent, _ := alice.Say(ctx, room, "!ping")
	if _, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("no encrypted pong: %v", err)
	}

	random := func(n int) string {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return base64.RawStdEncoding.EncodeToString(b)
	}
	session := id.SessionID(random(32))
	resp, err := alice.SendMessageEvent(ctx, room, event.EventEncrypted, &event.EncryptedEventContent{
		Algorithm: id.AlgorithmMegolmV1,
		SenderKey: alice.Crypto.Machine().OwnIdentity().IdentityKey,
		//lint:ignore SA1019 the homeserver speaks Matrix v1.2, where the device is still named
		DeviceID:         alice.DeviceID,
		SessionID:        session,
		MegolmCiphertext: []byte(random(120)),
	})
	if err != nil {
		t.Fatal(err)
	}
	couldNotRead := func(evt *event.Event) bool {
		return j.replyTo(resp.EventID)(evt) && strings.Contains(tesths.Body(evt), "I could not read your last message; please send it again")
	}
	if _, err := alice.WaitFor(ctx, 60*time.Second, readable(couldNotRead)); err != nil {
		t.Fatalf("no could-not-read reply: %v\n%s", err, j.logs.String())
	}
	logs := j.logs.String()
	if !strings.Contains(logs, string(session)) || !strings.Contains(logs, "Could not decrypt a message") {
		t.Errorf("the failure is not logged with its session %s", session)
	}
	// Jarvis still reads what follows, and said it could not read once.
	sent, _ = alice.Say(ctx, room, "!ping")
	if _, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("no pong after the unreadable message: %v", err)
	}
	if n := len(alice.Events(readable(couldNotRead))); n != 1 {
		t.Errorf("said it could not read %d times, want once", n)
	}
}

// TestEncryptedDirectRoom: a notice for a person goes to a direct room
// that Jarvis creates encrypted, and the person reads it there.
func TestEncryptedDirectRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	sent, _ := alice.Say(ctx, room, "!ping")
	if _, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("no encrypted pong: %v", err)
	}

	st := j.openStore(t)
	if err := st.Outbox().Enqueue(ctx, core.Notice{Key: "direct-test", ToUser: alice.UserID.String(),
		Kind: core.NoticeMessage, Body: "just for you"}); err != nil {
		t.Fatal(err)
	}
	direct, err := alice.WaitFor(ctx, waitReply, readable(func(evt *event.Event) bool {
		return evt.Type == event.EventMessage && evt.Sender == j.UserID && tesths.Body(evt) == "just for you"
	}))
	if err != nil {
		t.Fatalf("no encrypted direct message: %v\n%s", err, j.logs.String())
	}
	if direct.RoomID == room {
		t.Errorf("the direct message went to the dedicated room")
	}
	if ok, err := alice.StateStore.IsEncrypted(ctx, direct.RoomID); err != nil || !ok {
		t.Errorf("the direct room is not encrypted (%v)", err)
	}
}

// TestLostOutcomeInEncryptedRoom: when Jarvis died after a send reached
// the homeserver but before it recorded it, the next start finds the
// event by the notice marker inside its encrypted content and does not
// send it again.
func TestLostOutcomeInEncryptedRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	st := j.openStore(t)
	if err := st.Outbox().Enqueue(ctx, core.Notice{Key: "lost-outcome-test", RoomID: room.String(),
		Kind: core.NoticeMessage, Body: "sent once only"}); err != nil {
		t.Fatal(err)
	}
	once := readable(func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && tesths.Body(evt) == "sent once only"
	})
	if _, err := alice.WaitFor(ctx, waitReply, once); err != nil {
		t.Fatalf("the notice never arrived: %v", err)
	}
	j.Stop()
	// As if the process had died between the homeserver's answer and
	// recording it.
	if _, err := st.DB.Exec(ctx, `UPDATE outbox SET sent_at = 0, event_id = '', attempt_started = $1 WHERE key = 'lost-outcome-test'`,
		time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	j.Start()
	deadline := time.Now().Add(waitReply)
	for !strings.Contains(j.logs.String(), "An earlier attempt was delivered") {
		if time.Now().After(deadline) {
			t.Fatalf("Jarvis did not find its earlier send:\n%s", j.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	sent, _ := alice.Say(ctx, room, "!ping")
	if _, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("no pong after the restart: %v", err)
	}
	if n := len(alice.Events(once)); n != 1 {
		t.Errorf("the notice arrived %d times, want once", n)
	}
}

// TestInvitedToEncryptedRoom: Jarvis joins an encrypted room a person
// invites it to, reads them there and answers encrypted.
func TestInvitedToEncryptedRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	j.joinRoom(t, alice)
	stateKey := ""
	created, err := alice.CreateRoom(ctx, &mautrix.ReqCreateRoom{
		Preset:   "private_chat",
		IsDirect: true,
		Invite:   []id.UserID{j.UserID},
		InitialState: []*event.Event{{Type: event.StateEncryption, StateKey: &stateKey,
			Content: event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return evt.Type == event.StateMember && evt.RoomID == created.RoomID && evt.GetStateKey() == j.UserID.String() &&
			evt.Content.AsMember().Membership == event.MembershipJoin
	}); err != nil {
		t.Fatalf("Jarvis did not join: %v\n%s", err, j.logs.String())
	}
	sent, err := alice.Say(ctx, created.RoomID, "!ping")
	if err != nil {
		t.Fatal(err)
	}
	sentEncrypted(t, alice, sent)
	if _, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("no encrypted pong in the invited room: %v\n%s", err, j.logs.String())
	}
}

// TestWrongPickleKey: a pickle key that does not open the stored keys
// stops Jarvis at start with a message, instead of retrying for ever or
// making a new identity.
func TestWrongPickleKey(t *testing.T) {
	t.Parallel()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	j.joinRoom(t, alice)
	j.Stop()
	cfg, err := os.ReadFile(j.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("integration-pickle-key"), []byte("another-pickle-key"), 1)
	if err := os.WriteFile(j.cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	j.Start()
	select {
	case <-j.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("Jarvis kept running with the wrong pickle key:\n%s", j.logs.String())
	}
	if code := j.cmd.ProcessState.ExitCode(); code != 2 {
		t.Errorf("exit code %d, want 2 (configuration)", code)
	}
	if !strings.Contains(j.logs.String(), "bot.encryption.pickle_key: does not decrypt") {
		t.Errorf("the log does not name the pickle key:\n%s", j.logs.String())
	}
}

// TestSendBeforeSyncKnowsTheRoom: a notice waiting at start goes to a room
// the state store knows nothing of yet (its state lost, or not synced
// yet); Jarvis reads the room's state first and sends it encrypted.
func TestSendBeforeSyncKnowsTheRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	sent, _ := alice.Say(ctx, room, "!ping")
	if _, err := alice.WaitFor(ctx, waitReply, readable(j.replyTo(sent))); err != nil {
		t.Fatalf("no encrypted pong: %v", err)
	}
	j.Stop()
	st := j.openStore(t)
	if _, err := st.DB.Exec(ctx, `DELETE FROM mx_room_state`); err != nil {
		t.Fatal(err)
	}
	if err := st.Outbox().Enqueue(ctx, core.Notice{Key: "before-sync-test", RoomID: room.String(),
		Kind: core.NoticeMessage, Body: "waiting since before the start"}); err != nil {
		t.Fatal(err)
	}
	j.Start()
	notice, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return evt.Sender == j.UserID && evt.RoomID == room && (evt.Type == event.EventMessage &&
			tesths.Body(evt) == "waiting since before the start")
	})
	if err != nil {
		t.Fatalf("the notice never arrived: %v\n%s", err, j.logs.String())
	}
	if !tesths.Encrypted(notice) {
		t.Errorf("the notice went out in the clear")
	}
}
