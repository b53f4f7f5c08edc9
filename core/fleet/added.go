package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// AddedAgent is an agent added over the API or the CLI, without an edit
// of the configuration file, whose agents stay the static set beside it.
type AddedAgent struct {
	Name string
	// Cadence, Grace, Schedule, TimeZone and DependsOn are as in
	// AgentConfig.
	Cadence   time.Duration
	Grace     time.Duration
	Schedule  string
	TimeZone  string
	DependsOn []string
	// By is who added or last changed it: the credential, or "cli".
	By string
	// At is when it was added or last changed.
	At time.Time
}

// config is the agent as the roster takes it.
func (a AddedAgent) config() AgentConfig {
	return AgentConfig{Name: a.Name, Cadence: a.Cadence, Grace: a.Grace, Schedule: a.Schedule, TimeZone: a.TimeZone,
		DependsOn: slices.Clone(a.DependsOn)}
}

// AgentStore keeps the agents added over the API or the CLI.
type AgentStore interface {
	// AddedAgents lists them by name.
	AddedAgents(ctx context.Context) ([]AddedAgent, error)
	// PutAddedAgent adds an agent or replaces the one of the same name,
	// in any case, and reports whether it is new.
	PutAddedAgent(ctx context.Context, a AddedAgent) (bool, error)
	// DeleteAddedAgent removes the agent of the name, in any case;
	// core.ErrNotFound when there is none.
	DeleteAddedAgent(ctx context.Context, name string) error
}

// ReadAgents reads the agents added over the API into the roster: at the
// start, and at every sweep, so that a Jarvis that took the lease over
// watches the agents the other added.
func (f *Service) ReadAgents(ctx context.Context) error {
	if f.deps.Agents == nil {
		return nil
	}
	added, err := f.deps.Agents.AddedAgents(ctx)
	if err != nil {
		return fmt.Errorf("read added agents: %w", err)
	}
	f.rosterMu.Lock()
	defer f.rosterMu.Unlock()
	if slices.EqualFunc(added, f.added, sameAdded) {
		return nil
	}
	r, err := f.build(f.static, added)
	if err != nil {
		return fmt.Errorf("read added agents: %w", err)
	}
	f.added = added
	f.roster.Store(r)
	return nil
}

func sameAdded(a, b AddedAgent) bool {
	return a.Name == b.Name && a.Cadence == b.Cadence && a.Grace == b.Grace && a.Schedule == b.Schedule &&
		a.TimeZone == b.TimeZone && slices.Equal(a.DependsOn, b.DependsOn)
}

// AddedAgents lists the agents added over the API or the CLI, by name,
// but for those the configuration file has come to name too: while it
// does, the file's agent is the one watched.
func (f *Service) AddedAgents() []AddedAgent {
	f.rosterMu.Lock()
	defer f.rosterMu.Unlock()
	return slices.DeleteFunc(slices.Clone(f.added), func(a AddedAgent) bool { return f.staticIndex(a.Name) >= 0 })
}

// PutAgent adds an agent, or changes one added before, and watches it
// from now: it is expected within its cadence (or by its schedule's next
// run). An agent of the configuration file is refused (ErrConflict): it is
// changed there. A bad field is an ErrInvalid naming it as the API does
// (cadence, depends_on[0]). It reports whether the agent is new.
func (f *Service) PutAgent(ctx context.Context, a AddedAgent) (bool, error) {
	if f.deps.Agents == nil {
		return false, core.Refuse(core.ErrConflict, "agents are not kept here")
	}
	f.rosterMu.Lock()
	defer f.rosterMu.Unlock()
	if i := f.staticIndex(a.Name); i >= 0 {
		return false, core.Refuse(core.ErrConflict, "%s is in the configuration file (fleet.agents[%d]): change it there", f.static.Agents[i].Name, i)
	}
	for _, d := range a.DependsOn {
		if _, ok := f.roster.Load().byKey[strings.ToUpper(d)]; !ok && !strings.EqualFold(d, a.Name) {
			return false, core.Invalid("depends_on", "no agent named %q", d)
		}
	}
	limit := cmp.Or(f.static.MaxAddedAgents, DefaultMaxAddedAgents)
	if !slices.ContainsFunc(f.added, func(b AddedAgent) bool { return strings.EqualFold(b.Name, a.Name) }) && len(f.added) >= limit {
		return false, core.Refuse(core.ErrRateLimited, "%d agents were added, the most there may be (fleet.max_added_agents); "+
			"remove one to add another", len(f.added))
	}
	if a.At.IsZero() {
		a.At = f.deps.Clock.Now()
	}
	added := slices.DeleteFunc(slices.Clone(f.added), func(b AddedAgent) bool { return strings.EqualFold(b.Name, a.Name) })
	added = append(added, a)
	slices.SortFunc(added, func(x, y AddedAgent) int { return strings.Compare(strings.ToUpper(x.Name), strings.ToUpper(y.Name)) })
	r, err := f.build(f.static, added)
	if err != nil {
		return false, f.asAgentField(err, added, a.Name)
	}
	var created bool
	err = f.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		created, err = f.deps.Agents.PutAddedAgent(ctx, a)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put agent %s: %w", a.Name, err)
	}
	f.added = added
	f.roster.Store(r)
	return created, nil
}

// RemoveAgent stops watching an agent added over the API or the CLI; its
// history stays. An agent of the configuration file is refused
// (ErrConflict); an unknown one is ErrNotFound.
func (f *Service) RemoveAgent(ctx context.Context, name string) error {
	if f.deps.Agents == nil {
		return core.Refuse(core.ErrConflict, "agents are not kept here")
	}
	f.rosterMu.Lock()
	defer f.rosterMu.Unlock()
	if i := f.staticIndex(name); i >= 0 {
		return core.Refuse(core.ErrConflict, "%s is in the configuration file (fleet.agents[%d]): remove it there", f.static.Agents[i].Name, i)
	}
	added := slices.DeleteFunc(slices.Clone(f.added), func(b AddedAgent) bool { return strings.EqualFold(b.Name, name) })
	r, err := f.build(f.static, added)
	if err != nil {
		return err
	}
	if err := f.deps.Tx.InTx(ctx, func(ctx context.Context) error { return f.deps.Agents.DeleteAddedAgent(ctx, name) }); err != nil {
		return fmt.Errorf("remove agent %s: %w", name, err)
	}
	f.added = added
	f.roster.Store(r)
	return nil
}

// staticIndex is the index of the configured agent of the name, or -1.
func (f *Service) staticIndex(name string) int {
	return slices.IndexFunc(f.static.Agents, func(a AgentConfig) bool { return strings.EqualFold(a.Name, name) })
}

// asAgentField names a field of the agent being put, name, as the API
// does, from the roster's error, which names it as fleet.agents[i].field:
// the added agents come after the configured ones, those of a configured
// name left out.
func (f *Service) asAgentField(err error, added []AddedAgent, name string) error {
	var fe *core.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	i := len(f.static.Agents)
	for _, a := range added {
		if strings.EqualFold(a.Name, name) {
			break
		}
		if f.staticIndex(a.Name) < 0 {
			i++
		}
	}
	if field, ok := strings.CutPrefix(fe.Field, fmt.Sprintf("fleet.agents[%d].", i)); ok {
		return core.Invalid(strings.Split(field, "[")[0], "%s", fe.Reason)
	}
	return err
}
