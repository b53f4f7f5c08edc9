package commands

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
)

// TestSysToken: an admin issues, lists and revokes the API's tokens in
// their direct room; in a shared room or through a bridge Jarvis refuses,
// says why, and issues nothing; a token is shown once, in the direct room
// only.
func TestSysToken(t *testing.T) {
	ctx := context.Background()
	tokenRE := regexp.MustCompile(`jat_[0-9a-f]{64}`)
	h := newHarness(t)
	creds := services.Wiring{Store: h.store, Clock: h.clock}.Credentials(func(d *credential.Deps) {
		d.Agents = func() []string { return []string{"EVE"} }
	})
	h.proc.AddFeatures(Features{System: &System{}, Credentials: creds})
	const admin, dm = "@admin:x", "!dm:x"
	if err := h.store.Outbox().SetDirectRoom(ctx, admin, dm); err != nil {
		t.Fatal(err)
	}
	in := func(room, body string, puppet ...string) []string {
		t.Helper()
		h.seq++
		msg := Message{RoomID: room, EventID: "$t" + strings.Repeat("t", h.seq), Sender: admin, Body: body, Sent: h.clock.Now()}
		if len(puppet) > 0 {
			msg.Puppet, msg.Network = puppet[0], "telegram"
		}
		return h.handle(t, msg)
	}
	for _, tt := range []struct{ name, room, body, puppet, want string }{
		{"issue in a shared room", "!room:x", "!sys token issue supervisor", "", "never in a shared room where others read along"},
		{"list in a shared room", "!room:x", "!sys token list", "", "never in a shared room"},
		{"issue through a bridge", dm, "!sys token issue supervisor", "@telegram_1:x", "not through a bridge"},
		{"an unknown role", dm, "!sys token issue admin", "", "No token issued: role must be agent, supervisor, orchestrator or receiver"},
		{"an agent not configured", dm, "!sys token issue agent MALLORY", "", "No token issued: agent \"MALLORY\" is not an agent Jarvis watches (EVE); add it with"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			if tt.puppet != "" {
				got = in(tt.room, tt.body, tt.puppet)
			} else {
				got = in(tt.room, tt.body)
			}
			if len(got) != 1 || !strings.Contains(got[0], tt.want) || tokenRE.MatchString(got[0]) {
				t.Fatalf("replies %q, want one saying %q and no token", got, tt.want)
			}
			if list, _ := creds.List(ctx); len(list) != 0 {
				t.Errorf("tokens issued: %+v", list)
			}
		})
	}
	if got := h.say(t, "@alice:x", "!sys token issue supervisor"); len(got) != 1 || tokenRE.MatchString(got[0]) {
		t.Errorf("a non-admin got %q", got)
	}

	got := in(dm, "!sys token issue agent eve")
	if len(got) != 1 || !strings.Contains(got[0], "The agent EVE token, shown this once") {
		t.Fatalf("issue = %q", got)
	}
	token := tokenRE.FindString(got[0])
	p, err := creds.Authenticate(ctx, token)
	if err != nil || p.Role != credential.Agent || p.Agent != "EVE" {
		t.Fatalf("the token shown is %+v (%v), want EVE's agent token", p, err)
	}
	waiting, err := h.store.Outbox().Waiting(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range waiting {
		if tokenRE.MatchString(n.Body) && n.RoomID != dm {
			t.Errorf("a token landed outside the direct room: %+v", n.Notice)
		}
	}
	if got := in(dm, "!sys token list"); len(got) != 1 || !strings.Contains(got[0], p.ID) || !strings.Contains(got[0], "agent for EVE") ||
		strings.Contains(got[0], token) {
		t.Errorf("list = %q", got)
	}
	if got := in(dm, "!sys token revoke "+p.ID); len(got) != 1 || !strings.Contains(got[0], "is revoked") {
		t.Errorf("revoke = %q", got)
	}
	if _, err := creds.Authenticate(ctx, token); !errors.Is(err, core.ErrUnauthorized) {
		t.Errorf("a revoked token still works: %v", err)
	}
	if got := in(dm, "!sys token revoke "+p.ID); len(got) != 1 || !strings.Contains(got[0], "There is no token") {
		t.Errorf("revoking twice = %q", got)
	}
}
