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
)

// TestApprovalLimits: an agent's request past approvals.max_open or
// approvals.rate is refused with the key, stores nothing and relays
// nothing; the room hears once per window and limit that the agent is
// being refused. A request answered makes room; the window's end does too.
func TestApprovalLimits(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			s := testdb.OpenStore(t, engine)
			w := services.Wiring{Store: s, Clock: clock, Room: testRoom, Admins: []string{testAdmin}}
			svc := w.Approvals(approval.Config{RemindAfter: 15 * time.Minute, MaxOpen: 2, Rate: approval.Rate{Count: 3, Window: time.Hour}})
			n := 0
			request := func() (approval.Approval, error) {
				n++
				a, _, err := svc.Request(ctx, approval.Input{Key: fmt.Sprintf("k%d", n), Agent: "EVE", Action: "deploy", Reason: "why not"})
				return a, err
			}
			var open []approval.Approval
			steps := []struct {
				name    string
				before  func()
				wantKey string // "" is accepted
				// wantTold is how many "being refused" lines the room has
				// heard after the step.
				wantTold int
			}{
				{name: "first"},
				{name: "second"},
				{name: "third, past max_open", wantKey: "approvals.max_open", wantTold: 1},
				{name: "fourth, past max_open again: not told twice", wantKey: "approvals.max_open", wantTold: 1},
				{name: "one answered, a third is taken", before: func() {
					if _, err := svc.Decide(ctx, open[0].ID, approval.Verdict{Approve: true}, approval.Decider{Who: testAdmin, Network: "matrix", Trust: core.TrustNative}); err != nil {
						t.Fatal(err)
					}
					open = open[1:]
				}, wantTold: 1},
				{name: "another answered, but past the rate", before: func() {
					if _, err := svc.Decide(ctx, open[0].ID, approval.Verdict{}, approval.Decider{Who: testAdmin, Network: "matrix", Trust: core.TrustNative}); err != nil {
						t.Fatal(err)
					}
					open = open[1:]
				}, wantKey: "approvals.rate", wantTold: 2},
				{name: "an hour on, taken", before: func() { clock.Advance(time.Hour) }, wantTold: 2},
			}
			for _, st := range steps {
				if st.before != nil {
					st.before()
				}
				pendingBefore, _ := s.Outbox().Depth(ctx)
				a, err := request()
				var le *core.LimitError
				switch {
				case st.wantKey == "" && err != nil:
					t.Fatalf("%s: Request = %v", st.name, err)
				case st.wantKey == "":
					open = append(open, a)
				case !errors.Is(err, core.ErrRateLimited) || !errors.As(err, &le) || le.Key != st.wantKey:
					t.Fatalf("%s: Request = %v, want rate limited naming %s", st.name, err, st.wantKey)
				default:
					if depth, _ := s.Outbox().Depth(ctx); depth > pendingBefore+1 {
						t.Errorf("%s: a refused request wrote %d notices, want at most the one line", st.name, depth-pendingBefore)
					}
				}
				var told int
				if err := s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM outbox WHERE key LIKE 'approval-refused:%'`).Scan(&told); err != nil {
					t.Fatal(err)
				}
				if told != st.wantTold {
					t.Errorf("%s: the room was told %d times that EVE is refused, want %d", st.name, told, st.wantTold)
				}
			}
			pending, err := s.Approvals().PendingApprovals(ctx)
			if err != nil || len(pending) != 2 {
				t.Errorf("pending = %d (%v), want 2: nothing refused was stored", len(pending), err)
			}
			line, err := s.Outbox().Get(ctx, fmt.Sprintf("approval-refused:EVE:approvals.max_open:%d",
				time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC).Unix()))
			if err != nil || !strings.Contains(line.Body, "**EVE** is asking for approval past `approvals.max_open`") {
				t.Errorf("the line the room is told = %q (%v)", line.Body, err)
			}
		})
	}
}
