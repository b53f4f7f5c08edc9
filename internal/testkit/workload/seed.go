package workload

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/store"
)

// Tokens are the API credentials the workload calls with: one per agent,
// the supervisor's and the orchestrator's.
type Tokens struct {
	Agents       map[string]string
	Supervisor   string
	Orchestrator string
}

// AgentNames returns n agent names, wl000 to wl(n-1).
func AgentNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("wl%03d", i)
	}
	return names
}

// FleetYAML is the fleet section of a Jarvis configuration that lists
// agents, each with cadence.
func FleetYAML(agents []string, cadence time.Duration) string {
	var b strings.Builder
	b.WriteString("fleet:\n  agents:\n")
	for _, a := range agents {
		fmt.Fprintf(&b, "    - name: %s\n      cadence: %s\n", a, cadence)
	}
	return b.String()
}

// IssueTokens issues the tokens of agents, the supervisor and the
// orchestrator in st, through the credential service that `jarvis token
// issue` uses. A running Jarvis on the same database accepts them.
func IssueTokens(ctx context.Context, st *store.Store, agents []string) (Tokens, error) {
	creds := credential.NewService(credential.Deps{Store: st.Credentials(), Clock: core.SystemClock{},
		Agents: func() []string { return agents }})
	tk := Tokens{Agents: make(map[string]string, len(agents))}
	var err error
	if tk.Supervisor, _, err = creds.Issue(ctx, credential.Supervisor, ""); err != nil {
		return Tokens{}, fmt.Errorf("issue the supervisor's token: %w", err)
	}
	if tk.Orchestrator, _, err = creds.Issue(ctx, credential.Orchestrator, ""); err != nil {
		return Tokens{}, fmt.Errorf("issue the orchestrator's token: %w", err)
	}
	for _, a := range agents {
		if tk.Agents[a], _, err = creds.Issue(ctx, credential.Agent, a); err != nil {
			return Tokens{}, fmt.Errorf("issue %s's token: %w", a, err)
		}
	}
	return tk, nil
}

// Tripwires describes the armed tripwires SeedTripwires writes.
type Tripwires struct {
	// Count is how many, spread over Scopes citizens of Server
	// (@wl-citizen00042:Server) and over the agents' fleet sources.
	Count  int
	Scopes int
	Server string
	// Agents are the agents the tripwires watch; Jarvis re-evaluates them
	// whenever one of them reports.
	Agents []string
	// TripEvery makes one tripwire in TripEvery fire whenever its agent
	// reports an MII below 0.75 and reset when it reports more (the
	// workload reports between 0.5 and 1), journaled for its citizen and
	// never pushed; the others watch for an MII below 0.01, which never
	// comes. 0 makes none of them fire.
	TripEvery int
	// Owner, when set, owns the tripwires that fire instead of a
	// citizen: a real user, whom Jarvis tells in a direct room when one
	// of them is quarantined for flapping.
	Owner string
}

// mii bounds what the workload's agents report, so that the tripwires
// SeedTripwires writes fire as it says.
const (
	miiLow   = 0.5
	miiHigh  = 1.0
	miiTrip  = 0.75
	miiNever = 0.01
)

// SeedTripwires writes armed tripwires on the fleet's MII sources straight
// into st, in one transaction, as a workspace that has run for a while
// holds them; Jarvis evaluates them as any other. Each citizen's tripwires
// stay within the per-citizen cap only if Count/Scopes does; the store
// does not check it.
func SeedTripwires(ctx context.Context, st *store.Store, tw Tripwires) error {
	if tw.Count == 0 {
		return nil
	}
	if tw.Scopes < 1 || len(tw.Agents) == 0 || tw.Server == "" {
		return fmt.Errorf("seed tripwires: need scopes, agents and a server name")
	}
	q := st.Tripwires()
	now := time.Now().UTC()
	return st.InTx(ctx, func(ctx context.Context) error {
		for i := range tw.Count {
			rec := tripwire.Record{Scope: fmt.Sprintf("@wl-citizen%05d:%s", i%tw.Scopes, tw.Server), Definition: tripwire.Definition{
				ID: fmt.Sprintf("tw_wl_%06d", i), Label: fmt.Sprintf("workload %d", i), Rationale: "load the evaluator",
				Source:    core.SourceRef{Kind: fleet.SourceAgentMII, Param: tw.Agents[i%len(tw.Agents)]},
				Condition: tripwire.Condition{Op: tripwire.OpLT, Threshold: miiNever},
				Action:    tripwire.Action{Journal: true}, CooldownSeconds: 60,
				Status: tripwire.Armed, CreatedAt: now, UpdatedAt: now,
			}}
			if tw.TripEvery > 0 && i%tw.TripEvery == 0 {
				rec.Condition.Threshold = miiTrip
				if tw.Owner != "" {
					rec.Scope = tw.Owner
				}
			}
			if err := q.InsertTripwire(ctx, rec); err != nil {
				return fmt.Errorf("seed tripwire %d: %w", i, err)
			}
		}
		return nil
	})
}
