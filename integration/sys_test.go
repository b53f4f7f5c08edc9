package integration

import (
	"context"
	"strings"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/tesths"
)

func TestSysVerbsForAdminsOnly(t *testing.T) {
	ctx := context.Background()
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: bob.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinRoom(t, bob)

	tests := []struct {
		name   string
		who    *tesths.Person
		say    string
		want   []string
		forbid []string
	}{
		{"status", alice, "!sys status", []string{"Jarvis", "Matrix", "Outbox", "0 waiting", "Database"}, nil},
		{"logs are redacted", alice, "!sys logs 50", []string{"Logged in with password"}, []string{"jarvis-password", "syt_"}},
		{"non-admin status", bob, "!sys status", []string{"admins only"}, []string{"Outbox"}},
		{"non-admin logs", bob, "!sys logs", []string{"admins only"}, []string{"Logged in"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sent, err := tt.who.Say(ctx, room, tt.say)
			if err != nil {
				t.Fatal(err)
			}
			reply, err := tt.who.WaitFor(ctx, waitReply, j.replyTo(sent))
			if err != nil {
				t.Fatal(err)
			}
			body := tesths.Body(reply)
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s: reply lacks %q:\n%s", tt.say, w, body)
				}
			}
			for _, f := range tt.forbid {
				if strings.Contains(body, f) {
					t.Errorf("%s: reply shows %q:\n%s", tt.say, f, body)
				}
			}
		})
	}
}
