package commands

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

var linkCode = regexp.MustCompile(`code is ([A-Z2-7]{8})\b`)

func TestLinkPuppetToAccount(t *testing.T) {
	tests := []struct {
		name          string
		askPuppet     string // who asks: a puppet, or "" for the native account
		other         string // the account named as the one to redeem
		confirmPuppet string
		advance       time.Duration
		want          string
		linked        bool
	}{
		{name: "puppet asks, account confirms", askPuppet: "@telegram_1:x", other: "@alice:x", want: "Linked: @telegram_1:x on telegram is @alice:x", linked: true},
		{name: "account asks, puppet confirms", other: "@telegram_1:x", confirmPuppet: "@telegram_1:x", want: "Linked: @telegram_1:x on telegram is @alice:x", linked: true},
		{name: "expired code", askPuppet: "@telegram_1:x", other: "@alice:x", advance: 11 * time.Minute, want: "expired"},
		{name: "two native accounts", other: "@alice:x", want: "not another account"},
		{name: "two puppets", askPuppet: "@telegram_1:x", other: "@telegram_2:x", confirmPuppet: "@telegram_2:x", want: "one bridged account to one Matrix account"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newLinkHarness(t)
			ctx := context.Background()
			asked := h.sayIn(t, h.direct(t, tt.askPuppet), tt.askPuppet, "!link "+tt.other)
			m := linkCode.FindStringSubmatch(strings.Join(asked, " "))
			if m == nil {
				if !strings.Contains(strings.Join(asked, " "), tt.want) {
					t.Fatalf("asking replied %q, want %q", asked, tt.want)
				}
				return
			}
			h.clock.Advance(tt.advance)
			got := h.redeem(t, tt.confirmPuppet, strings.ToLower(m[1]))
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Fatalf("confirming replied %q, want %q", got, tt.want)
			}
			account, err := h.store.LinkedAccount(ctx, "@telegram_1:x")
			if tt.linked != (err == nil && account == "@alice:x") {
				t.Errorf("link stored = %q (%v), want linked=%v", account, err, tt.linked)
			}
			if tt.linked {
				if again := h.sayFrom(t, tt.confirmPuppet, "!link "+m[1]); len(again) != 1 || !strings.Contains(again[0], "unknown or already used") {
					t.Errorf("a code used twice got %q", again)
				}
			}
		})
	}
}

// TestLinkAttacks makes each attack on linking and checks it fails and
// links nothing.
func TestLinkAttacks(t *testing.T) {
	ctx := context.Background()
	// ask has the puppet ask, in its direct room, for a code Alice redeems.
	ask := func(t *testing.T, h *harness) string {
		t.Helper()
		m := linkCode.FindStringSubmatch(strings.Join(h.sayIn(t, h.direct(t, "@telegram_1:x"), "@telegram_1:x", "!link @alice:x"), " "))
		if m == nil {
			t.Fatal("no link code")
		}
		return m[1]
	}
	linked := func(t *testing.T, h *harness, puppet string) string {
		t.Helper()
		account, _ := h.store.LinkedAccount(ctx, puppet)
		return account
	}

	t.Run("a code is never shown in a shared room", func(t *testing.T) {
		h := newLinkHarness(t)
		h.direct(t, "@telegram_1:x")
		got := h.sayFrom(t, "@telegram_1:x", "!link @alice:x")
		if len(got) != 1 || !strings.Contains(got[0], "direct room") || linkCode.MatchString(got[0]) {
			t.Fatalf("asking in a shared room replied %q", got)
		}
	})
	t.Run("a stranger's puppet cannot redeem a code meant for someone else", func(t *testing.T) {
		h := newLinkHarness(t)
		code := ask(t, h)
		got := h.handle(t, h.msg("!room:x", "@telegram_666:x", "@telegram_666:x", "!link "+code))
		if len(got) != 1 || !strings.Contains(got[0], "not for this account") {
			t.Fatalf("the stranger got %q", got)
		}
		if a, b := linked(t, h, "@telegram_666:x"), linked(t, h, "@telegram_1:x"); a != "" || b != "" {
			t.Fatalf("the stranger's try linked %q / %q", a, b)
		}
		if got := h.redeem(t, "", code); len(got) != 1 || !strings.Contains(got[0], "Linked") {
			t.Errorf("the rightful account then got %q", got)
		}
	})
	t.Run("a phished code links nothing until the account reads whom it links and says yes", func(t *testing.T) {
		h := newLinkHarness(t)
		code := ask(t, h)
		redeem := h.msg("!room:x", "@alice:x", "", "!link "+code)
		got := h.handle(t, redeem)
		if len(got) != 1 || !strings.Contains(got[0], "links @telegram_1:x on telegram to your account @alice:x") ||
			!strings.Contains(got[0], "approval requests put to you") || !strings.Contains(got[0], "notes") {
			t.Fatalf("redeeming the puppet's code replied %q, want a question naming the puppet and what it could do", got)
		}
		if a := linked(t, h, "@telegram_1:x"); a != "" {
			t.Fatalf("the puppet was linked to %q before Alice said yes", a)
		}
		key := "confirm:" + confirmRedeem + ":" + redeem.EventID
		// The puppet cannot say yes for her, even as itself.
		h.answerAs(t, key, Message{Sender: "@telegram_1:x", Puppet: "@telegram_1:x", Network: "telegram"}, YesReaction)
		if a := linked(t, h, "@telegram_1:x"); a != "" {
			t.Fatalf("the puppet's own ✅ linked it to %q", a)
		}
		caused := h.answer(t, key, "@alice:x", NoReaction)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "Not linked") || linked(t, h, "@telegram_1:x") != "" {
			t.Fatalf("Alice's ❌ caused %+v", caused)
		}
		if got := h.sayFrom(t, "", "!link "+code); len(got) != 1 || !strings.Contains(got[0], "unknown or already used") {
			t.Errorf("the refused code, sent again, got %q", got)
		}
	})
	t.Run("a native stranger cannot redeem it either", func(t *testing.T) {
		h := newLinkHarness(t)
		code := ask(t, h)
		got := h.handle(t, h.msg("!room:x", "@mallory:x", "", "!link "+code))
		if len(got) != 1 || !strings.Contains(got[0], "not for this account") || linked(t, h, "@telegram_1:x") != "" {
			t.Fatalf("mallory got %q and the puppet is linked to %q", got, linked(t, h, "@telegram_1:x"))
		}
	})
	t.Run("a code locks after 5 wrong tries", func(t *testing.T) {
		h := newLinkHarness(t)
		code := ask(t, h)
		for i := range 5 {
			stranger := "@telegram_66" + string(rune('0'+i)) + ":x"
			h.handle(t, h.msg("!room:x", stranger, stranger, "!link "+code))
		}
		if got := h.sayFrom(t, "", "!link "+code); len(got) != 1 || !strings.Contains(got[0], "unknown") || linked(t, h, "@telegram_1:x") != "" {
			t.Fatalf("after 5 wrong tries the right account got %q", got)
		}
	})
	t.Run("an account locks after 5 wrong codes", func(t *testing.T) {
		h := newLinkHarness(t)
		code := ask(t, h)
		for range 5 {
			if got := h.sayFrom(t, "", "!link AAAAAAAA"); len(got) != 1 || !strings.Contains(got[0], "unknown") {
				t.Fatalf("a wrong code got %q", got)
			}
		}
		if got := h.sayFrom(t, "", "!link "+code); len(got) != 1 || !strings.Contains(got[0], "Too many") || linked(t, h, "@telegram_1:x") != "" {
			t.Fatalf("the locked account's right code got %q", got)
		}
		h.clock.Advance(core.LinkCodeTTL + time.Minute)
		if got := h.sayFrom(t, "", "!link "+code); len(got) != 1 || !strings.Contains(got[0], "expired") {
			t.Errorf("once unlocked, the old code got %q", got)
		}
	})
	t.Run("an existing link is never overwritten", func(t *testing.T) {
		h := newLinkHarness(t)
		h.redeem(t, "", ask(t, h))
		h.direct(t, "@telegram_1:x")
		bobDM := "!dm-bob:x"
		if err := h.store.Outbox().SetDirectRoom(ctx, "@bob:x", bobDM); err != nil {
			t.Fatal(err)
		}
		got := h.handle(t, h.msg(bobDM, "@bob:x", "", "!link @telegram_1:x"))
		if len(got) != 1 || !strings.Contains(got[0], "already linked") || linkCode.MatchString(got[0]) {
			t.Fatalf("bob asking for a linked puppet got %q", got)
		}
		if a := linked(t, h, "@telegram_1:x"); a != "@alice:x" {
			t.Errorf("the puppet is now linked to %q", a)
		}
	})
	t.Run("unlink only from the Matrix account", func(t *testing.T) {
		h := newLinkHarness(t)
		h.redeem(t, "", ask(t, h))
		linkedPuppet := h.msg("!room:x", "@alice:x", "@telegram_1:x", "!unlink @telegram_1:x")
		if got := h.handle(t, linkedPuppet); len(got) != 1 || !strings.Contains(got[0], "not through a bridge") {
			t.Fatalf("the puppet's unlink got %q", got)
		}
		h.sayAs(t, "$unlink", "@alice:x", "!unlink @telegram_1:x")
		tap := linkedPuppet
		caused := h.answerAs(t, "confirm:unlink:$unlink", tap, YesReaction)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "Nothing was done") || linked(t, h, "@telegram_1:x") != "@alice:x" {
			t.Fatalf("the puppet's ✅ caused %+v", caused)
		}
		h.answer(t, "confirm:unlink:$unlink", "@alice:x", YesReaction)
		if a := linked(t, h, "@telegram_1:x"); a != "" {
			t.Errorf("after Alice's ✅ the puppet is still linked to %q", a)
		}
	})
}

func newLinkHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.proc.AddFeatures(Features{Identities: h.store})
	return h
}

// direct records a direct room between Jarvis and the user (Alice, or
// her puppet) and returns it.
func (h *harness) direct(t *testing.T, puppet string) string {
	t.Helper()
	user := "@alice:x"
	if puppet != "" {
		user = puppet
	}
	room := "!dm-" + strings.Trim(user, "@:x") + ":x"
	if err := h.store.Outbox().SetDirectRoom(context.Background(), user, room); err != nil {
		t.Fatal(err)
	}
	return room
}

// msg is a message in room from sender, through puppet if set.
func (h *harness) msg(room, sender, puppet, body string) Message {
	h.seq++
	msg := Message{RoomID: room, EventID: "$l" + strings.Repeat("z", h.seq), Sender: sender, Network: "matrix", Body: body, Sent: h.clock.Now()}
	if puppet != "" {
		msg.Puppet, msg.Network = puppet, "telegram"
	}
	return msg
}

// sayIn sends as Alice in room, either from Matrix or from the given
// puppet (not linked yet: the puppet is its own sender).
func (h *harness) sayIn(t *testing.T, room, puppet, body string) []string {
	t.Helper()
	sender := "@alice:x"
	if puppet != "" {
		sender = puppet
	}
	return h.handle(t, h.msg(room, sender, puppet, body))
}

// redeem sends `!link code` as Alice in the shared room, from Matrix or
// the puppet, and returns the reply; when the reply asks Alice's Matrix
// account to confirm the puppet the code links, it taps ✅ and returns
// what that caused instead.
func (h *harness) redeem(t *testing.T, puppet, code string) []string {
	t.Helper()
	msg := h.msg("!room:x", "@alice:x", puppet, "!link "+code)
	if puppet != "" {
		msg.Sender = puppet
	}
	got := h.handle(t, msg)
	if len(got) != 1 || !strings.HasPrefix(got[0], "This code links") {
		return got
	}
	var bodies []string
	for _, n := range h.answer(t, "confirm:"+confirmRedeem+":"+msg.EventID, "@alice:x", YesReaction) {
		bodies = append(bodies, n.Body)
	}
	return bodies
}

// sayFrom sends as Alice in the shared room, from Matrix or the puppet.
func (h *harness) sayFrom(t *testing.T, puppet, body string) []string {
	t.Helper()
	return h.sayIn(t, "!room:x", puppet, body)
}

// TestLinkMovesWhatThePuppetOwns: linking gives the puppet's tripwires,
// personal token and open confirmation to the Matrix account in one go,
// and the reply says what moved; afterwards a moved tripwire trips to the
// account, the token acts for it, and the account answers the moved
// proposal.
func TestLinkMovesWhatThePuppetOwns(t *testing.T) {
	const puppet, alice = "@telegram_5:x", "@alice:x"
	ctx := context.Background()
	th := newTripwireHarness(t, time.Hour)
	th.proc.AddFeatures(Features{Identities: th.store})
	fromPuppet := func(eventID, body string) []string {
		t.Helper()
		return th.handle(t, Message{RoomID: "!room:x", EventID: eventID, Sender: puppet, Puppet: puppet, Network: "telegram",
			Body: body, Sent: th.clock.Now()})
	}
	fromPuppet("$arm1", `!tw arm GI lt 0.7 --because "the Seal needs it" --push`)
	fromPuppet("$arm2", `!tw arm vault lt 5 --because "we pay from it"`)
	if armed, _ := th.tw.List(ctx, puppet); len(armed) != 2 {
		t.Fatalf("the puppet armed %d tripwires, want 2", len(armed))
	}
	token, _, err := th.tw.CreateToken(ctx, puppet, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if proposal := fromPuppet("$propose", "tell me when GI drops below 0.5"); len(proposal) != 1 {
		t.Fatalf("the proposal got %q", proposal)
	}
	th.tick(t, 0.8) // the evaluator has the puppet's tripwires in view

	asked := th.sayIn(t, th.direct(t, puppet), puppet, "!link "+alice)
	code := linkCode.FindStringSubmatch(strings.Join(asked, " "))
	if code == nil {
		t.Fatalf("no code: %q", asked)
	}
	linked := th.redeem(t, "", code[1])
	want := "Moved 2 tripwires, 1 token, 1 open question from " + puppet + " to " + alice + "."
	if len(linked) != 1 || !strings.Contains(linked[0], want) {
		t.Fatalf("linking replied %q, want %q", linked, want)
	}
	if left, _ := th.tw.List(ctx, puppet); len(left) != 0 {
		t.Errorf("%d tripwires left with the puppet", len(left))
	}
	if mine, _ := th.tw.List(ctx, alice); len(mine) != 2 {
		t.Errorf("alice has %d tripwires after linking, want 2", len(mine))
	}
	if citizen, err := th.tw.CitizenForToken(ctx, token); err != nil || citizen != alice {
		t.Errorf("the puppet's token acts for %q (%v), want %s", citizen, err, alice)
	}

	th.tick(t, 0.65)
	waiting, err := th.store.Outbox().Waiting(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	// A pushed trip is a message with 💤 on it and its chart in the
	// message's thread.
	var trips, charts []string
	for _, n := range waiting {
		switch {
		case strings.HasPrefix(n.Key, "trip:") && n.Kind == core.NoticeImage:
			charts = append(charts, n.ToUser)
		case strings.HasPrefix(n.Key, "trip:") && n.Kind == core.NoticeMessage:
			trips = append(trips, n.ToUser)
		}
	}
	if len(trips) != 1 || trips[0] != alice {
		t.Errorf("the moved tripwire's trip went to %q, want one to %s", trips, alice)
	}
	if len(charts) != 1 || charts[0] != alice {
		t.Errorf("the moved tripwire's chart went to %q, want one to %s", charts, alice)
	}
	if caused := th.answer(t, "confirm:"+confirmTripwire+":$propose", alice, YesReaction); len(caused) == 0 {
		t.Error("alice's ✅ on the puppet's moved proposal did nothing")
	}
	if mine, _ := th.tw.List(ctx, alice); len(mine) != 3 {
		t.Errorf("alice has %d tripwires after confirming the moved proposal, want 3", len(mine))
	}
}

// TestLinkByConfirmation: a puppet with no direct room with Jarvis asks
// in a shared room; the named account is asked in its own direct room and
// links with ✅, which the puppet itself cannot give; without a direct
// room on either side nothing is asked.
func TestLinkByConfirmation(t *testing.T) {
	const puppet, alice = "@telegram_1:x", "@alice:x"
	ctx := context.Background()
	t.Run("no direct room on either side", func(t *testing.T) {
		h := newLinkHarness(t)
		got := h.sayFrom(t, puppet, "!link "+alice)
		if len(got) != 1 || !strings.Contains(got[0], "no direct room with you on either account") {
			t.Fatalf("got %q", got)
		}
	})
	h := newLinkHarness(t)
	dm := h.direct(t, "")
	ask := Message{RoomID: "!room:x", EventID: "$ask", Sender: puppet, Puppet: puppet, Network: "telegram", Body: "!link " + alice, Sent: h.clock.Now()}
	if got := h.handle(t, ask); len(got) != 1 || !strings.Contains(got[0], "I asked "+alice+" to confirm in their direct room") {
		t.Fatalf("the puppet's ask got %q", got)
	}
	key := "confirm:" + confirmLink + ":$ask"
	question, err := h.store.Outbox().Get(ctx, key)
	if err != nil || question.RoomID != dm || !strings.Contains(question.Body, puppet+" on telegram asks to be linked") {
		t.Fatalf("the question %+v (%v) is not in Alice's direct room", question, err)
	}
	if caused := h.answerAs(t, key, Message{Sender: puppet, Puppet: puppet, Network: "telegram"}, YesReaction); len(caused) != 0 {
		t.Errorf("the puppet's own ✅ was answered: %+v", caused)
	}
	if caused := h.answerAs(t, key, Message{Sender: alice, Puppet: "@telegram_2:x", Network: "telegram"}, YesReaction); len(caused) != 1 ||
		!strings.Contains(caused[0].Body, "not through a bridge") {
		t.Errorf("a ✅ through a bridge got %+v", caused)
	}
	if account, _ := h.store.LinkedAccount(ctx, puppet); account != "" {
		t.Fatalf("linked to %q before Alice confirmed", account)
	}
	caused := h.answer(t, key, alice, YesReaction)
	if len(caused) != 1 || !strings.Contains(caused[0].Body, "Linked: "+puppet+" on telegram is "+alice) {
		t.Fatalf("Alice's ✅ caused %+v", caused)
	}
	if account, err := h.store.LinkedAccount(ctx, puppet); err != nil || account != alice {
		t.Errorf("linked to %q (%v), want %s", account, err, alice)
	}
}
