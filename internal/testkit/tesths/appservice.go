package tesths

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// Appservice is a test application service registered on the homeserver,
// owning puppets the way a mautrix bridge does (@telegram_…, @whatsapp_…),
// and driving them with its token and the user_id query parameter.
type Appservice struct {
	ASToken string
	File    string
	// BotLocalpart is the bridge bot's localpart, e.g. "telegrambot".
	BotLocalpart string
	srv          *httptest.Server
}

// NewAppservice writes a registration into dir and starts the loopback
// endpoint the homeserver pushes transactions to. Pass Env() to Start.
func NewAppservice(dir string, puppetPrefixes ...string) (*Appservice, error) {
	a := &Appservice{ASToken: RandomName("as_"), BotLocalpart: "telegrambot"}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	reg := fmt.Sprintf("id: jarvis-test-bridge\nurl: %q\nas_token: %q\nhs_token: %q\nsender_localpart: %s\nrate_limited: false\nnamespaces:\n  users:\n",
		a.srv.URL, a.ASToken, RandomName("hs_"), a.BotLocalpart)
	for _, prefix := range puppetPrefixes {
		reg += fmt.Sprintf("    - exclusive: true\n      regex: %q\n", "@"+prefix+".*")
	}
	reg += "  aliases: []\n  rooms: []\n"
	a.File = filepath.Join(dir, "appservice.yaml")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return a, os.WriteFile(a.File, []byte(reg), 0o600)
}

// Env is the environment that makes scripts/homeserver.sh load it.
func (a *Appservice) Env() string { return "JARVIS_HS_APPSERVICE=" + a.File }

// Close stops the transaction endpoint.
func (a *Appservice) Close() { a.srv.Close() }

// Puppet registers a puppet in the appservice's namespace and returns a
// client that acts as it (appservice token plus ?user_id=).
func (a *Appservice) Puppet(ctx context.Context, h *Homeserver, localpart string) (*mautrix.Client, error) {
	userID := h.UserID(localpart)
	cli, err := a.As(h, userID)
	if err != nil {
		return nil, err
	}
	_, _, err = cli.Register(ctx, &mautrix.ReqRegister[any]{Username: localpart, Type: mautrix.AuthTypeAppservice, InhibitLogin: true})
	if err != nil {
		return nil, fmt.Errorf("register puppet %s: %w", localpart, err)
	}
	return cli, nil
}

// As returns a client acting as a user of the appservice's namespace (a
// puppet or the bridge bot).
func (a *Appservice) As(h *Homeserver, userID id.UserID) (*mautrix.Client, error) {
	cli, err := mautrix.NewClient(h.URL, userID, a.ASToken)
	if err != nil {
		return nil, err
	}
	cli.SetAppServiceUserID = true
	return cli, nil
}

// WaitIn reads room's latest events as cli, which does not sync (a
// bridge's puppet), until one matches or timeout passes.
func WaitIn(ctx context.Context, cli *mautrix.Client, room id.RoomID, timeout time.Duration, match func(*event.Event) bool) (*event.Event, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := cli.Messages(ctx, room, "", "", mautrix.DirectionBackward, nil, 50)
		if err != nil {
			return nil, err
		}
		for _, evt := range resp.Chunk {
			evt.RoomID = room
			_ = evt.Content.ParseRaw(evt.Type)
			if match(evt) {
				return evt, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, fmt.Errorf("nothing matching in %s within %s", room, timeout)
}
