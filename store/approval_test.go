package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// What the approval service does is tested in core/approval; here,
// answers at once, which the engines' transactions decide.

// alice is the approver of the approval tests.
const alice = "@alice:example.org"

// newTestApprovals is the approval service on a fresh store: admins are
// testAdmin, and Jarvis talks to everyone on example.org.
func newTestApprovals(t testing.TB, clock core.Clock) (*approval.Service, *store.Store) {
	t.Helper()
	s := testdb.OpenStore(t, testEngine)
	w := services.Wiring{Store: s, Clock: clock, Room: testRoom, Admins: []string{testAdmin}}
	return w.Approvals(approval.Config{RemindAfter: 15 * time.Minute, Approvers: []string{alice}}, func(d *approval.Deps) {
		d.MayAsk = func(u string) bool { return strings.HasSuffix(u, ":example.org") }
	}), s
}

// deployRequest asks for approval to deploy, naming alice.
func deployRequest(key string) approval.Input {
	return approval.Input{Key: key, Agent: "EVE", Action: "deploy build 412 to production",
		Reason: "the **hotfix** for the <b>login</b> outage", Approver: alice}
}

func TestApprovalConcurrentAnswersDecideOnce(t *testing.T) {
	ctx := context.Background()
	clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
	svc, _ := newTestApprovals(t, clock)
	a, _, err := svc.Request(ctx, deployRequest("race"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	results := make([]approval.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			who := []string{alice, testAdmin}[i%2]
			results[i], errs[i] = svc.Decide(ctx, a.ID, approval.Verdict{Approve: i%2 == 0}, approval.Decider{Who: who, Network: "matrix", Trust: core.TrustNative})
		})
	}
	wg.Wait()
	decided := 0
	for i := range n {
		if errs[i] != nil && !errors.Is(errs[i], core.ErrConflict) {
			t.Errorf("answer %d: %v", i, errs[i])
		}
		if errs[i] == nil && !results[i].AlreadyDecided {
			decided++
		}
	}
	got, _ := svc.Get(ctx, a.ID)
	if decided != 1 || got.Status == approval.Pending {
		t.Errorf("%d answers decided, the request is %s; want exactly one decision", decided, got.Status)
	}
}
