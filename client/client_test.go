package client_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/client"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/contract"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// jarvis is the real API on loopback, wired on a real store as Jarvis
// wires it, with EVE configured and a client for each role whose requests
// and answers are checked against the OpenAPI document.
type jarvis struct {
	eve, orchestrator, supervisor *client.Client
	approvals                     *approval.Service
	breakers                      *breaker.Service
	clock                         *coretest.Clock
}

func newJarvis(t *testing.T) *jarvis {
	t.Helper()
	ctx := context.Background()
	clock := coretest.NewClock(time.Now().UTC().Truncate(time.Second))
	st := testdb.OpenStore(t, store.SQLite)
	w := services.Wiring{Store: st, Clock: clock, Room: "!jarvis:example.org", Admins: []string{"@admin:example.org"}}
	breakers := w.Breakers(testconfig.Breaker())
	incidents := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
	fl := w.Fleet(t, fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE"}}}, func(d *fleet.Deps) { d.Breakers, d.Incidents = breakers, incidents })
	approvals := w.Approvals(approval.Config{RemindAfter: 15 * time.Minute, Approvers: []string{"@alice:example.org"}})
	creds := w.Credentials()
	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, creds)
	api.RegisterBreaker(server, breakers, fl)
	api.RegisterFleet(server, fl, breakers)
	api.RegisterAgents(server, fl)
	api.RegisterCards(server, w.Cards(card.Config{}), breakers)
	api.RegisterApprovals(server, approvals, breakers)
	srv := httptest.NewServer(server.Handler())
	t.Cleanup(srv.Close)
	issue := func(role credential.Role, agent string) *client.Client {
		token, _, err := creds.Issue(ctx, role, agent)
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(srv.URL, token)
		c.HTTP.Transport = contract.Transport(t, api.OpenAPI(), nil)
		return c
	}
	j := &jarvis{eve: issue(credential.Agent, "EVE"), orchestrator: issue(credential.Orchestrator, ""), supervisor: issue(credential.Supervisor, ""),
		approvals: approvals, breakers: breakers, clock: clock}
	j.eve.Agent = "EVE"
	return j
}

// TestClientReports: an agent reports through the client what the
// reporting protocol asks, from the empty heartbeat to a signed
// attestation, and Jarvis takes each.
func TestClientReports(t *testing.T) {
	ctx := context.Background()
	j := newJarvis(t)
	receipt, err := j.eve.Heartbeat(ctx, client.Heartbeat{})
	if err != nil || receipt.Halted() || !receipt.NextExpectedBy.After(receipt.ReceivedAt) {
		t.Fatalf("empty heartbeat: %+v, %v; want taken, not halted, the next one expected later", receipt, err)
	}
	if receipt, err := j.eve.Ping(ctx); err != nil || receipt.BreakerState != "closed" {
		t.Fatalf("ping: %+v, %v", receipt, err)
	}
	for name, ping := range map[string]func(context.Context) (client.HeartbeatReceipt, error){
		"start": j.eve.PingStart, "fail": j.eve.PingFail,
		"exit 1": func(ctx context.Context) (client.HeartbeatReceipt, error) { return j.eve.PingExit(ctx, 1) },
		"exit 0": func(ctx context.Context) (client.HeartbeatReceipt, error) { return j.eve.PingExit(ctx, 0) },
	} {
		if receipt, err := ping(ctx); err != nil || receipt.BreakerState != "closed" {
			t.Fatalf("ping %s: %+v, %v", name, receipt, err)
		}
	}
	mii := 0.9
	if _, err := j.eve.Heartbeat(ctx, client.Heartbeat{Cycle: "C-284", MII: &mii, Mode: "yellow", Timestamp: j.clock.Now(),
		Spend: &client.Spend{TokensIn: 1200, Cost: 0.04, Currency: "USD"}, BootID: "boot-1"}); err != nil {
		t.Fatalf("full heartbeat: %v", err)
	}
	if err := j.eve.Journal(ctx, client.JournalEntry{Cycle: "C-284", EntryID: "eve-C-284-001", Title: "Shard 4 indexed",
		Content: "12,400 documents.", SignalWeight: 0.4, Timestamp: j.clock.Now()}); err != nil {
		t.Fatalf("journal: %v", err)
	}
	if err := j.orchestrator.OpenSubject(ctx, client.Subject{ID: "seal-C-284-001", Hash: "sha256:4be1", Title: "Release 284",
		Agents: []string{"EVE"}}); err != nil {
		t.Fatalf("open subject: %v", err)
	}
	if err := j.eve.Attest(ctx, client.Attestation{SubjectID: "seal-C-284-001", Verdict: "pass", Rationale: "The hash matches.",
		Timestamp: j.clock.Now()}); err != nil {
		t.Fatalf("attest: %v", err)
	}
}

// TestClientProblems: a refusal is a *Problem naming every bad field, and
// errors.Is tells its kind; a halted agent's receipt says so and its
// journal is refused as ErrBreakerOpen.
func TestClientProblems(t *testing.T) {
	ctx := context.Background()
	j := newJarvis(t)
	mii := 1.5
	_, err := j.eve.Heartbeat(ctx, client.Heartbeat{MII: &mii, Mode: "blue"})
	var p *client.Problem
	if !errors.As(err, &p) || !errors.Is(err, client.ErrValidation) || p.Status != 400 || len(p.Errors) != 2 {
		t.Fatalf("bad heartbeat: %v (%+v), want a validation problem naming mii and mode_self_report", err, p)
	}
	if p.Errors[0].Field != "mii" || p.Errors[1].Field != "mode_self_report" {
		t.Errorf("errors %+v, want mii then mode_self_report", p.Errors)
	}
	if _, err := j.breakers.Open(ctx, "EVE", breaker.OpenInput{Severity: breaker.SeveritySafety, Reason: "wrote outside its sandbox",
		By: "guardian"}); err != nil {
		t.Fatal(err)
	}
	receipt, err := j.eve.Heartbeat(ctx, client.Heartbeat{})
	if err != nil || !receipt.Halted() {
		t.Errorf("heartbeat while halted: %+v, %v; want taken and Halted", receipt, err)
	}
	err = j.eve.Journal(ctx, client.JournalEntry{Cycle: "C-284", EntryID: "eve-C-284-002", Title: "t", Content: "c", SignalWeight: 0.1})
	if !errors.Is(err, client.ErrBreakerOpen) || errors.Is(err, client.ErrValidation) {
		t.Errorf("journal while halted: %v, want ErrBreakerOpen", err)
	}
}

// TestClientWorksCards: an orchestrator publishes a card through the
// client, and an agent finds it, claims it, signs it off and asks a
// question about it.
func TestClientWorksCards(t *testing.T) {
	ctx := context.Background()
	j := newJarvis(t)
	set, err := j.orchestrator.PublishCardSet(ctx, "publish-1",
		client.CardSpec{Ref: "schema", Goal: "Add the events schema", Acceptance: []string{"migration applies"}, Priority: "P2"})
	if err != nil || len(set.Cards) != 1 {
		t.Fatalf("publish: %+v, %v", set, err)
	}
	again, err := j.orchestrator.PublishCardSet(ctx, "publish-1",
		client.CardSpec{Ref: "schema", Goal: "Add the events schema", Acceptance: []string{"migration applies"}, Priority: "P2"})
	if err != nil || again.Cards[0].ID != set.Cards[0].ID {
		t.Errorf("publish retried with its key: %+v, %v; want the first set again", again, err)
	}
	cards, err := j.eve.Cards(ctx, "published")
	if err != nil || len(cards) != 1 || cards[0].Goal != "Add the events schema" {
		t.Fatalf("cards: %+v, %v", cards, err)
	}
	id := cards[0].ID
	claimed, err := j.eve.SetCardState(ctx, id, "claimed", "")
	if err != nil || claimed.State != "claimed" || claimed.Worker != "EVE" {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	if err := j.eve.SignOff(ctx, id, claimed.Revision, "approved", ""); err != nil {
		t.Errorf("sign off: %v", err)
	}
	d, err := j.eve.AskDecision(ctx, id, client.Question{Question: "Keep the old column?", Options: []string{"keep", "drop"},
		Branch: "events-schema", Note: "migration written"})
	if err != nil || d.Status != "open" || len(d.Options) != 2 {
		t.Errorf("ask: %+v, %v", d, err)
	}
}

// TestClientWaitsForApproval: an agent asks before a risky action and
// waits; once a person approves, the wait ends approved.
func TestClientWaitsForApproval(t *testing.T) {
	ctx := context.Background()
	j := newJarvis(t)
	a, err := j.eve.RequestApproval(ctx, "drop-staging-1", client.ApprovalRequest{Action: "drop table staging_events",
		Reason: "frees 40 GB", Approver: "@alice:example.org"})
	if err != nil || a.Status != "pending" {
		t.Fatalf("request: %+v, %v", a, err)
	}
	if _, err := j.approvals.Decide(ctx, a.ID, approval.Verdict{Approve: true}, approval.Decider{Who: "@alice:example.org", Network: "matrix", Trust: core.TrustNative}); err != nil {
		t.Fatal(err)
	}
	got, err := j.eve.WaitApproval(ctx, a.ID, time.Millisecond)
	if err != nil || !got.Approved() || got.DecidedBy != "@alice:example.org" {
		t.Errorf("wait: %+v, %v; want approved by @alice:example.org", got, err)
	}
}

// TestClientUsesTheStandardLibraryOnly: an agent can vendor the client
// without Jarvis's dependencies.
func TestClientUsesTheStandardLibraryOnly(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s, outside the standard library", name, path)
			}
		}
	}
}

// TestClientAgents: a supervisor adds, lists, changes and removes an agent
// through the client; an agent of the configuration file is a conflict,
// and an agent's token may not add one.
func TestClientAgents(t *testing.T) {
	ctx := context.Background()
	j := newJarvis(t)
	added, err := j.supervisor.PutAgent(ctx, client.Agent{Name: "BACKUP", Schedule: "0 3 * * *", TimeZone: "Europe/Berlin", Grace: "30m", DependsOn: []string{"EVE"}})
	if err != nil || added.Source != "api" || added.Schedule != "0 3 * * *" || added.Grace != "30m0s" || added.AddedAt.IsZero() {
		t.Fatalf("put BACKUP: %+v, %v", added, err)
	}
	list, err := j.eve.Agents(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "EVE" || list[0].Source != "config" || list[1].Name != "BACKUP" {
		t.Fatalf("agents: %+v, %v; want EVE from the configuration, then BACKUP", list, err)
	}
	if _, err := j.supervisor.PutAgent(ctx, client.Agent{Name: "EVE", Cadence: "1h"}); !errors.Is(err, client.ErrConflict) {
		t.Errorf("put EVE, of the configuration file: %v, want a conflict", err)
	}
	if _, err := j.eve.PutAgent(ctx, client.Agent{Name: "MALLORY"}); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("an agent's token puts an agent: %v, want forbidden", err)
	}
	if err := j.supervisor.RemoveAgent(ctx, "BACKUP"); err != nil {
		t.Fatalf("remove BACKUP: %v", err)
	}
	if err := j.supervisor.RemoveAgent(ctx, "BACKUP"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("remove BACKUP again: %v, want not found", err)
	}
}
