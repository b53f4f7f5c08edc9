package approval_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// The people of the approval tests: alice and bob are on example.org,
// which Jarvis talks to; the stranger is not.
const (
	alice    = "@alice:example.org"
	bob      = "@bob:example.org"
	stranger = "@mallory:elsewhere.org"
)

// testRoom and testAdmin are the room and admin the approval service is
// wired with.
const (
	testRoom  = "!jarvis:example.org"
	testAdmin = "@admin:example.org"
)

// testPuppet is a bridged account the operator lists as an approver.
const testPuppet = "@telegram_7:example.org"

// testPolicy lets agents name alice, bob, the stranger and testPuppet,
// and lets a deadline an hour or more away approve.
var testPolicy = approval.Config{RemindAfter: 15 * time.Minute, Approvers: []string{alice, bob, stranger, testPuppet},
	DeadlineMayApprove: true, MinApproveDeadline: time.Hour}

// newTestApprovals is the approval service on a fresh store of engine
// with testPolicy: admins are testAdmin, and Jarvis talks to everyone on
// example.org.
func newTestApprovals(t testing.TB, engine string, clock core.Clock) (*approval.Service, *store.Store) {
	t.Helper()
	return newApprovalsWith(t, engine, clock, testPolicy)
}

// newApprovalsWith is newTestApprovals with another policy.
func newApprovalsWith(t testing.TB, engine string, clock core.Clock, cfg approval.Config) (*approval.Service, *store.Store) {
	t.Helper()
	s := testdb.OpenStore(t, engine)
	w := services.Wiring{Store: s, Clock: clock, Room: testRoom, Admins: []string{testAdmin}}
	return w.Approvals(cfg, func(d *approval.Deps) {
		d.MayAsk = func(u string) bool { return strings.HasSuffix(u, ":example.org") }
	}), s
}

// deployRequest asks for approval to deploy, naming alice.
func deployRequest(key string) approval.Input {
	return approval.Input{Key: key, Agent: "EVE", Action: "deploy build 412 to production",
		Reason: "the **hotfix** for the <b>login</b> outage", Approver: alice}
}

func TestApprovalRequestIsRelayed(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			svc, s := newTestApprovals(t, engine, clock)
			tests := []struct {
				name          string
				in            approval.Input
				wantMentions  string
				wantText      []string
				wantReactions []string
			}{
				{
					name: "named approver, approve or deny", in: deployRequest("k1"), wantMentions: alice,
					wantText: []string{alice + ": agent EVE asks for approval to: deploy build 412 to production",
						`Reason: the \*\*hotfix\*\* for the \<b\>login\</b\> outage`, "React ✅ to approve or ❌ to deny"},
					wantReactions: []string{"✅", "❌"},
				},
				{
					name: "admins, options, deadline and default",
					in: approval.Input{Key: "k2", Agent: "EVE", Action: "rotate the API keys", Reason: "a key leaked",
						Options: []string{"rotate now", "rotate tonight"}, Deadline: clock.Now().Add(2 * time.Hour), Default: "rotate tonight"},
					wantMentions: testAdmin,
					wantText: []string{testAdmin + ": agent EVE asks", "1. rotate now\n2. rotate tonight\n",
						"Deadline: Thu 9 Jul 2026 11:00 UTC, then option 2 (rotate tonight) is approved."},
					wantReactions: []string{"1️⃣", "2️⃣", "❌"},
				},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					a, replayed, err := svc.Request(ctx, tt.in)
					if err != nil || replayed {
						t.Fatalf("Request = %v, replayed %v", err, replayed)
					}
					if a.Status != approval.Pending || !strings.HasPrefix(a.ID, "apr_") {
						t.Errorf("request %s is %s, want a pending apr_ id", a.ID, a.Status)
					}
					relay, err := s.Outbox().Get(ctx, a.NoticeKey())
					if err != nil {
						t.Fatalf("relay notice: %v", err)
					}
					if relay.RoomID != testRoom || strings.Join(relay.Mentions, ",") != tt.wantMentions {
						t.Errorf("relay to %s mentioning %v, want %s mentioning %s", relay.RoomID, relay.Mentions, testRoom, tt.wantMentions)
					}
					for _, want := range tt.wantText {
						if !strings.Contains(relay.Body, want) {
							t.Errorf("relay lacks %q:\n%s", want, relay.Body)
						}
					}
					for i, r := range tt.wantReactions {
						n, err := s.Outbox().Get(ctx, a.NoticeKey()+":react:"+string(rune('1'+i)))
						if err != nil || n.Body != r || n.Target != a.NoticeKey() {
							t.Errorf("reaction %d = %q on %q (%v), want %s on the relay", i+1, n.Body, n.Target, err, r)
						}
					}
				})
			}
		})
	}
}

func TestApprovalIdempotencyKey(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			svc, s := newTestApprovals(t, engine, clock)
			first, _, err := svc.Request(ctx, deployRequest("deploy-412"))
			if err != nil {
				t.Fatal(err)
			}
			depth, _ := s.Outbox().Depth(ctx)

			again, replayed, err := svc.Request(ctx, deployRequest("deploy-412"))
			if err != nil || !replayed || again.ID != first.ID {
				t.Errorf("the same key and request = %s, replayed %v, %v; want %s replayed", again.ID, replayed, err, first.ID)
			}
			other := deployRequest("deploy-412")
			other.Action = "deploy build 413 to production"
			if _, _, err := svc.Request(ctx, other); !errors.Is(err, core.ErrUnprocessable) {
				t.Errorf("the same key for another request = %v, want ErrUnprocessable", err)
			}
			other.Agent = "WALL-E"
			if a, replayed, err := svc.Request(ctx, other); err != nil || replayed || a.ID == first.ID {
				t.Errorf("another agent's same key = %s, replayed %v, %v; want a request of its own", a.ID, replayed, err)
			}
			if after, _ := s.Outbox().Depth(ctx); after != depth+3 {
				t.Errorf("outbox went from %d to %d notices, want only the other agent's relay and its 2 reactions", depth, after)
			}
		})
	}
}

func TestApprovalHostileRequestsChangeNothing(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			svc, s := newTestApprovals(t, engine, clock)
			long := func(n int) string { return strings.Repeat("x", n) }
			tests := []struct {
				name      string
				edit      func(*approval.Input)
				wantField string
			}{
				{"no key", func(in *approval.Input) { in.Key = " " }, "Idempotency-Key"},
				{"over-long key", func(in *approval.Input) { in.Key = long(approval.MaxKeyLen + 1) }, "Idempotency-Key"},
				{"over-long action", func(in *approval.Input) { in.Action = long(approval.MaxActionLen + 1) }, "action"},
				{"action on two lines", func(in *approval.Input) { in.Action = "deploy\n@room: approved already" }, "action"},
				{"over-long reason", func(in *approval.Input) { in.Reason = long(approval.MaxReasonLen + 1) }, "reason"},
				{"over-long option", func(in *approval.Input) { in.Options = []string{"a", long(approval.MaxOptionLen + 1)} }, "options[1]"},
				{"too many options", func(in *approval.Input) { in.Options = strings.Fields("a b c d e f g h i j") }, "options"},
				{"one option", func(in *approval.Input) { in.Options = []string{"yes"} }, "options"},
				{"unknown approver", func(in *approval.Input) { in.Approver = "alice" }, "approver"},
				{"approver Jarvis does not talk to", func(in *approval.Input) { in.Approver = stranger }, "approver"},
				{"deadline in the past", func(in *approval.Input) { in.Deadline = clock.Now().Add(-time.Minute) }, "deadline"},
				{"deadline too far", func(in *approval.Input) { in.Deadline = clock.Now().Add(approval.MaxDeadline + time.Hour) }, "deadline"},
				{"default without deadline", func(in *approval.Input) { in.Default = approval.DefaultDeny }, "default"},
				{"default that is no option", func(in *approval.Input) {
					in.Deadline, in.Default = clock.Now().Add(time.Hour), "self-approve"
				}, "default"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					in := deployRequest("hostile")
					tt.edit(&in)
					_, _, err := svc.Request(ctx, in)
					var fe *core.FieldError
					if !errors.As(err, &fe) || fe.Field != tt.wantField {
						t.Errorf("Request = %v, want an invalid %s", err, tt.wantField)
					}
				})
			}
			if pending, _ := svc.Pending(ctx); len(pending) != 0 {
				t.Errorf("%d requests were recorded, want none", len(pending))
			}
			if depth, _ := s.Outbox().Depth(ctx); depth != 0 {
				t.Errorf("%d notices were written, want none", depth)
			}
		})
	}
}

func TestApprovalDecidedOnce(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			svc, s := newTestApprovals(t, engine, clock)
			a, _, err := svc.Request(ctx, deployRequest("once"))
			if err != nil {
				t.Fatal(err)
			}

			// Someone the request is not for changes nothing.
			if _, err := svc.Decide(ctx, a.ID, approval.Verdict{Approve: true}, approval.Decider{Who: bob, Network: "matrix", Trust: core.TrustNative}); !errors.Is(err, core.ErrForbidden) {
				t.Errorf("bob's approval = %v, want ErrForbidden", err)
			}
			if got, _ := svc.Get(ctx, a.ID); got.Status != approval.Pending {
				t.Fatalf("after bob, the request is %s, want pending", got.Status)
			}
			if _, err := s.Outbox().Get(ctx, a.NoticeKey()+":outcome"); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("bob's tap edited the relay: %v", err)
			}
			// An option on a request without options is no verdict.
			if _, err := svc.Decide(ctx, a.ID, approval.Verdict{Approve: true, Option: 2}, approval.Decider{Who: alice, Network: "matrix", Trust: core.TrustNative}); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("option 2 = %v, want ErrInvalid", err)
			}

			clock.Advance(2 * time.Minute)
			res, err := svc.Decide(ctx, a.ID, approval.Verdict{}, approval.Decider{Who: alice, Network: "matrix", Trust: core.TrustNative})
			if err != nil || res.AlreadyDecided || res.Approval.Status != approval.Denied || res.Approval.DecidedBy != alice {
				t.Fatalf("alice's denial = %+v, %v", res, err)
			}
			edit, err := s.Outbox().Get(ctx, a.NoticeKey()+":outcome")
			if err != nil || edit.Kind != core.NoticeEdit || !strings.Contains(edit.Body, "❌ Denied by "+alice+" via matrix after 2m.") {
				t.Errorf("the relay was edited into %q (%v)", edit.Body, err)
			}

			// A second tap, even an admin's, changes nothing.
			res, err = svc.Decide(ctx, a.ID, approval.Verdict{Approve: true}, approval.Decider{Who: testAdmin, Network: "matrix", Trust: core.TrustNative})
			if err != nil || !res.AlreadyDecided || res.Approval.Status != approval.Denied || res.Approval.DecidedBy != alice {
				t.Errorf("a second answer = %+v, %v; want alice's denial standing", res, err)
			}
			if got, _ := svc.Get(ctx, a.ID); got.Status != approval.Denied || got.DecidedBy != alice {
				t.Errorf("the request reads %s by %s, want denied by alice", got.Status, got.DecidedBy)
			}
		})
	}
}

func TestApprovalDeadline(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			svc, s := newTestApprovals(t, engine, clock)
			tests := []struct {
				name       string
				options    []string
				def        string
				wantStatus approval.Status
				wantOption int
				wantSaid   string
			}{
				{"default deny", nil, approval.DefaultDeny, approval.Denied, 0, "so its default applies: denied."},
				{"default approve", nil, approval.DefaultApprove, approval.Approved, 0, "so its default applies: approved."},
				{"default option", []string{"now", "tonight"}, "tonight", approval.Approved, 2, "approved with 2. tonight."},
				{"no default", nil, "", approval.Expired, 0, "it expired, and EVE was told not to go ahead."},
			}
			var ids []string
			for _, tt := range tests {
				in := deployRequest(tt.name)
				in.Options, in.Default, in.Deadline = tt.options, tt.def, clock.Now().Add(time.Hour)
				a, _, err := svc.Request(ctx, in)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				ids = append(ids, a.ID)
			}
			if n, err := svc.Sweep(ctx); n != 0 || err != nil {
				t.Fatalf("a sweep before the deadline closed %d (%v)", n, err)
			}
			clock.Advance(time.Hour)
			if n, err := svc.Sweep(ctx); n != len(tests) || err != nil {
				t.Fatalf("the sweep at the deadline closed %d (%v), want %d", n, err, len(tests))
			}
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					a, _ := svc.Get(ctx, ids[i])
					if a.Status != tt.wantStatus || a.Option != tt.wantOption || a.Defaulted != (tt.def != "") {
						t.Errorf("request is %s option %d defaulted %v, want %s option %d", a.Status, a.Option, a.Defaulted, tt.wantStatus, tt.wantOption)
					}
					said, err := s.Outbox().Get(ctx, a.NoticeKey()+":deadline")
					if err != nil || !strings.Contains(said.Body, tt.wantSaid) || said.Target != a.NoticeKey() {
						t.Errorf("the deadline notice reads %q under %q (%v), want %q under the relay", said.Body, said.Target, err, tt.wantSaid)
					}
					if _, err := svc.Decide(ctx, a.ID, approval.Verdict{Approve: true, Option: tt.wantOption}, approval.Decider{Who: alice, Network: "matrix", Trust: core.TrustNative}); a.Status == approval.Expired && !errors.Is(err, core.ErrExpired) {
						t.Errorf("an answer after expiry = %v, want ErrExpired", err)
					}
				})
			}
		})
	}
}

func TestApprovalWakeConditions(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			svc, _ := newTestApprovals(t, engine, clock)
			waiting, _, _ := svc.Request(ctx, deployRequest("waiting"))
			answered, _, _ := svc.Request(ctx, deployRequest("answered"))
			if _, err := svc.Decide(ctx, answered.ID, approval.Verdict{Approve: true}, approval.Decider{Who: alice, Network: "matrix", Trust: core.TrustNative}); err != nil {
				t.Fatal(err)
			}
			if conds, _ := svc.WakeConditions(ctx); len(conds) != 0 {
				t.Errorf("at once: %d conditions, want none (the relay itself asks)", len(conds))
			}
			clock.Advance(15 * time.Minute)
			conds, err := svc.WakeConditions(ctx)
			if err != nil || len(conds) != 1 || conds[0].Key != "approval-pending:"+waiting.ID || conds[0].Mentions[0] != alice {
				t.Fatalf("after 15 minutes: %+v (%v), want the waiting request for alice", conds, err)
			}
		})
	}
}

// TestApprovalAdoptMovesPendingOnly: linking a puppet moves the pending
// requests that name it or ask it to the account, and leaves decided ones
// and other people's as they were.
func TestApprovalAdoptMovesPendingOnly(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			const puppet, account = testPuppet, "@carol:example.org"
			ctx := context.Background()
			svc, _ := newTestApprovals(t, engine, coretest.NewClock(time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)))
			request := func(key, approver string) approval.Approval {
				t.Helper()
				in := deployRequest(key)
				in.Approver = approver
				a, _, err := svc.Request(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			pending, decided, others := request("pending", puppet), request("decided", puppet), request("others", alice)
			if _, err := svc.Decide(ctx, decided.ID, approval.Verdict{Approve: true}, approval.Decider{Who: testAdmin, Network: "matrix", Trust: core.TrustNative}); err != nil {
				t.Fatal(err)
			}
			if n, err := svc.Adopt(ctx, puppet, account); err != nil || n != 1 {
				t.Fatalf("Adopt() = %d, %v; want 1 request moved", n, err)
			}
			for _, c := range []struct {
				id, approver string
			}{{pending.ID, account}, {decided.ID, puppet}, {others.ID, alice}} {
				a, err := svc.Get(ctx, c.id)
				if err != nil || a.Approver != c.approver || fmt.Sprint(a.Asked) != fmt.Sprint([]string{c.approver}) {
					t.Errorf("request %s names %q and asks %q (%v), want %s", c.id, a.Approver, a.Asked, err, c.approver)
				}
			}
		})
	}
}

// TestApprovalPolicyIsTheOperators: a request cannot widen the operator's
// policy. Each refusal names the key that would allow it, and nothing is
// stored or relayed.
func TestApprovalPolicyIsTheOperators(t *testing.T) {
	strict := testPolicy
	strict.Approvers, strict.DeadlineMayApprove = []string{alice}, false
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			tests := []struct {
				name    string
				cfg     approval.Config
				edit    func(*approval.Input)
				wantKey string
			}{
				{"an approver the operator did not list", strict, func(in *approval.Input) { in.Approver = bob }, "approvals.approvers"},
				{"a bridged account as approver", strict, func(in *approval.Input) { in.Approver = testPuppet }, "approvals.approvers"},
				{"a default that approves, when none may", strict, func(in *approval.Input) {
					in.Deadline, in.Default = clock.Now().Add(24*time.Hour), approval.DefaultApprove
				}, "approvals.deadline_may_approve"},
				{"an option as default, when none may", strict, func(in *approval.Input) {
					in.Options, in.Deadline, in.Default = []string{"now", "tonight"}, clock.Now().Add(24*time.Hour), "tonight"
				}, "approvals.deadline_may_approve"},
				{"a default that approves too soon", testPolicy, func(in *approval.Input) {
					in.Deadline, in.Default = clock.Now().Add(70*time.Second), approval.DefaultApprove
				}, "approvals.min_approve_deadline"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					svc, s := newApprovalsWith(t, engine, clock, tt.cfg)
					in := deployRequest("k")
					tt.edit(&in)
					_, _, err := svc.Request(ctx, in)
					if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tt.wantKey) {
						t.Fatalf("Request = %v, want ErrInvalid naming %s", err, tt.wantKey)
					}
					if pending, err := svc.Pending(ctx); err != nil || len(pending) != 0 {
						t.Errorf("a refused request left %d pending (%v)", len(pending), err)
					}
					if n, err := s.Outbox().Depth(ctx); err != nil || n != 0 {
						t.Errorf("a refused request queued %d notices (%v)", n, err)
					}
				})
			}
			t.Run("a default that denies, and the admins, need no policy", func(t *testing.T) {
				svc, _ := newApprovalsWith(t, engine, clock, strict)
				in := deployRequest("deny")
				in.Approver, in.Deadline, in.Default = testAdmin, clock.Now().Add(2*time.Minute), approval.DefaultDeny
				if _, _, err := svc.Request(ctx, in); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestApprovalAnsweredOnlyFromTrustedAccounts: a bridged account linked
// to nobody answers nothing, even one the operator lists, and an admin
// answers only from their own Matrix account; each refusal leaves the
// request pending.
func TestApprovalAnsweredOnlyFromTrustedAccounts(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			svc, _ := newTestApprovals(t, engine, coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)))
			toPuppet := deployRequest("to-puppet")
			toPuppet.Approver = testPuppet
			toAdmins := deployRequest("to-admins")
			toAdmins.Approver = ""
			tests := []struct {
				name     string
				in       approval.Input
				by       approval.Decider
				wantSaid string
			}{
				{"an unlinked puppet the operator listed", toPuppet,
					approval.Decider{Who: testPuppet, Network: "telegram", Trust: core.TrustBridged}, "linked to nobody"},
				{"a relay bot", toPuppet, approval.Decider{Who: testPuppet, Network: "telegram", Trust: core.TrustRelay}, "linked to nobody"},
				{"an admin's linked puppet, on the admins' request", toAdmins,
					approval.Decider{Who: testAdmin, Network: "telegram", Trust: core.TrustLinked}, "own Matrix account"},
				{"an admin's linked puppet, on a named approver's", deployRequest("to-alice"),
					approval.Decider{Who: testAdmin, Network: "telegram", Trust: core.TrustLinked}, "own Matrix account"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					a, _, err := svc.Request(ctx, tt.in)
					if err != nil {
						t.Fatal(err)
					}
					_, err = svc.Decide(ctx, a.ID, approval.Verdict{Approve: true}, tt.by)
					if !errors.Is(err, core.ErrForbidden) || !strings.Contains(err.Error(), tt.wantSaid) {
						t.Errorf("Decide = %v, want ErrForbidden saying %q", err, tt.wantSaid)
					}
					if got, _ := svc.Get(ctx, a.ID); got.Status != approval.Pending {
						t.Errorf("the request is %s, want pending", got.Status)
					}
				})
			}
			t.Run("a linked approver answers", func(t *testing.T) {
				a, _, err := svc.Request(ctx, deployRequest("linked"))
				if err != nil {
					t.Fatal(err)
				}
				res, err := svc.Decide(ctx, a.ID, approval.Verdict{Approve: true}, approval.Decider{Who: alice, Network: "telegram", Trust: core.TrustLinked})
				if err != nil || res.Approval.Status != approval.Approved {
					t.Fatalf("alice's linked puppet's approval = %+v, %v", res, err)
				}
			})
		})
	}
}
