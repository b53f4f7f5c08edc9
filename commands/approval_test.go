package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
)

// newApprovalHarness is a processor with `!approval` and the answers to
// relays; cardAdmin is the admin.
func newApprovalHarness(t *testing.T) (*harness, *approval.Service) {
	t.Helper()
	h := newHarness(t)
	w := services.Wiring{Store: h.store, Clock: h.clock, Room: "!room:x", Admins: []string{cardAdmin}}
	svc := w.Approvals(approval.Config{RemindAfter: 15 * time.Minute, Approvers: []string{ratifier, "@telegram_7:x"}})
	h.proc.AddFeatures(Features{Approvals: svc})
	return h, svc
}

func TestApprovalAnswers(t *testing.T) {
	tests := []struct {
		name    string
		sender  string
		answer  string
		options []string
		// before closes the request first: answers or expires it.
		before func(t *testing.T, h *harness, svc *approval.Service, a approval.Approval)
		// want is the status that stands afterwards, by wantBy.
		want   approval.Status
		wantBy string
		// say is a substring of the one message Jarvis sends besides the
		// relay's edit; empty means it says nothing more.
		say string
	}{
		{name: "the approver's ✅", sender: ratifier, answer: "✅", want: approval.Approved, wantBy: ratifier},
		{name: "the approver's ❌", sender: ratifier, answer: "❌", want: approval.Denied, wantBy: ratifier},
		{name: "a reply approve", sender: ratifier, answer: "Approve.", want: approval.Approved, wantBy: ratifier},
		{name: "a reply no", sender: ratifier, answer: "no", want: approval.Denied, wantBy: ratifier},
		{name: "an admin may answer", sender: cardAdmin, answer: "✅", want: approval.Approved, wantBy: cardAdmin},
		{name: "an option's keycap", sender: ratifier, answer: "2️⃣", options: []string{"now", "tonight"}, want: approval.Approved, wantBy: ratifier},
		{name: "someone else is refused once and changes nothing", sender: stranger, answer: "✅", want: approval.Pending,
			say: "Only the approver the request names (or an admin) can answer it."},
		{name: "text that is no verdict gets a hint", sender: ratifier, answer: "what does it break?", want: approval.Pending,
			say: "Answer with approve or deny."},
		{name: "other emoji are just reactions", sender: ratifier, answer: "👍", want: approval.Pending},
		{name: "a second tap changes nothing and says nothing", sender: cardAdmin, answer: "✅", want: approval.Denied, wantBy: ratifier,
			before: func(t *testing.T, h *harness, svc *approval.Service, a approval.Approval) {
				if _, err := svc.Decide(context.Background(), a.ID, approval.Verdict{}, approval.Decider{Who: ratifier, Network: "matrix", Trust: core.TrustNative}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "an expired request", sender: ratifier, answer: "approve", want: approval.Expired, say: "Too late: this request expired",
			before: func(t *testing.T, h *harness, svc *approval.Service, a approval.Approval) {
				h.clock.Advance(2 * time.Hour)
				if _, err := svc.Sweep(context.Background()); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h, svc := newApprovalHarness(t)
			a, _, err := svc.Request(ctx, approval.Input{Key: "k", Agent: "EVE", Action: "deploy", Reason: "hotfix",
				Options: tt.options, Approver: ratifier, Deadline: h.clock.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.before != nil {
				tt.before(t, h, svc, a)
			}
			caused := h.answer(t, a.NoticeKey(), tt.sender, tt.answer)
			after, _ := svc.Get(ctx, a.ID)
			if after.Status != tt.want || after.DecidedBy != tt.wantBy {
				t.Errorf("the request is %s by %q, want %s by %q", after.Status, after.DecidedBy, tt.want, tt.wantBy)
			}
			var edits, messages []string
			for _, n := range caused {
				switch {
				case n.Kind == core.NoticeEdit && n.Target == a.NoticeKey():
					edits = append(edits, n.Body)
				case n.Kind == core.NoticeMessage:
					messages = append(messages, n.Body)
				}
			}
			decidedNow := tt.before == nil && tt.want != approval.Pending
			if decidedNow != (len(edits) == 1) {
				t.Errorf("the relay was edited into %q; decided now: %v", edits, decidedNow)
			}
			if tt.say == "" {
				if len(messages) != 0 {
					t.Errorf("Jarvis said %q, want nothing", messages)
				}
				return
			}
			if len(messages) != 1 || !strings.Contains(messages[0], tt.say) {
				t.Errorf("Jarvis said %q, want one message with %q", messages, tt.say)
			}
		})
	}
}

func TestApprovalCommand(t *testing.T) {
	ctx := context.Background()
	h, svc := newApprovalHarness(t)
	if reply := onlyReply(t, h.say(t, ratifier, "!approval list")); !strings.Contains(reply, "No approval requests are waiting") {
		t.Errorf("an empty list reads %q", reply)
	}
	a, _, err := svc.Request(ctx, approval.Input{Key: "k", Agent: "EVE", Action: "rotate *keys*", Reason: "leak",
		Options: []string{"now", "tonight"}, Approver: ratifier})
	if err != nil {
		t.Fatal(err)
	}
	if reply := onlyReply(t, h.say(t, ratifier, "!approval list")); !strings.Contains(reply, "`"+a.ID+"` EVE: rotate \\*keys\\* (asks @alice:x)") {
		t.Errorf("the list reads %q", reply)
	}
	if reply := onlyReply(t, h.say(t, stranger, "!approval deny "+a.ID)); !strings.Contains(reply, "Only the approver") {
		t.Errorf("a stranger's deny: %q", reply)
	}
	if reply := onlyReply(t, h.say(t, ratifier, "!approval approve "+a.ID+" 3")); !strings.Contains(reply, "has options 1 to 2") {
		t.Errorf("an option out of range: %q", reply)
	}
	if reply := onlyReply(t, h.say(t, ratifier, "!approval approve "+a.ID+" tonight")); !strings.Contains(reply, "approved; EVE reads it") {
		t.Errorf("approve: %q", reply)
	}
	if got, _ := svc.Get(ctx, a.ID); got.Status != approval.Approved || got.Option != 2 {
		t.Errorf("the request is %s option %d, want approved with 2", got.Status, got.Option)
	}
	if reply := onlyReply(t, h.say(t, cardAdmin, "!approval deny "+a.ID)); !strings.Contains(reply, "Already decided") {
		t.Errorf("a later deny: %q", reply)
	}
	if reply := onlyReply(t, h.say(t, ratifier, "!approval deny apr_nope")); !strings.Contains(reply, "There is no approval request") {
		t.Errorf("an unknown id: %q", reply)
	}
}

// TestApprovalMovesWithALink: a request whose approver is a bridged
// puppet goes, when the puppet is linked, to the Matrix account: the
// account decides it (its puppet's answers come as the account from then
// on), the link's reply counts it, and someone else is still refused. A
// request put to the admins stays theirs.
func TestApprovalMovesWithALink(t *testing.T) {
	const puppet, alice = "@telegram_7:x", "@alice:x"
	ctx := context.Background()
	h, svc := newApprovalHarness(t)
	h.proc.AddFeatures(Features{Identities: h.store})
	mine, _, err := svc.Request(ctx, approval.Input{Key: "k1", Agent: "EVE", Action: "deploy", Reason: "hotfix", Approver: puppet})
	if err != nil {
		t.Fatal(err)
	}
	admins, _, err := svc.Request(ctx, approval.Input{Key: "k2", Agent: "EVE", Action: "restart", Reason: "stuck"})
	if err != nil {
		t.Fatal(err)
	}

	asked := h.sayIn(t, h.direct(t, puppet), puppet, "!link "+alice)
	code := linkCode.FindStringSubmatch(strings.Join(asked, " "))
	if code == nil {
		t.Fatalf("no code: %q", asked)
	}
	linked := h.redeem(t, "", code[1])
	if want := "Moved 1 open question from " + puppet + " to " + alice + "."; len(linked) != 1 || !strings.Contains(linked[0], want) {
		t.Fatalf("linking replied %q, want %q", linked, want)
	}
	if a, _ := svc.Get(ctx, mine.ID); a.Approver != alice || strings.Join(a.Asked, ",") != alice {
		t.Errorf("after the link the request names %q and asks %q, want %s", a.Approver, a.Asked, alice)
	}
	if a, _ := svc.Get(ctx, admins.ID); a.Approver != "" || strings.Join(a.Asked, ",") != cardAdmin {
		t.Errorf("the admins' request names %q and asks %q after the link, want the admins still", a.Approver, a.Asked)
	}

	if caused := h.answer(t, mine.NoticeKey(), stranger, "✅"); len(caused) != 1 {
		t.Errorf("a stranger's ✅ caused %+v, want one refusal", caused)
	}
	h.answer(t, mine.NoticeKey(), alice, "✅")
	if a, _ := svc.Get(ctx, mine.ID); a.Status != approval.Approved || a.DecidedBy != alice {
		t.Errorf("after alice's ✅ the request is %s by %q, want approved by %s", a.Status, a.DecidedBy, alice)
	}
}
