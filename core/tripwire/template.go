package tripwire

import (
	"context"
	"fmt"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// Template is a one-tap starter tripwire. Templates are
// suggestions: nothing is armed until the citizen asks.
type Template struct {
	ID        string         `json:"id"`
	Label     string         `json:"label"`
	Rationale string         `json:"rationale"`
	Source    core.SourceRef `json:"source"`
	Condition Condition      `json:"condition"`
	Action    Action         `json:"action"`
	// CooldownSeconds is the template's cooldown.
	CooldownSeconds int `json:"cooldown_seconds"`
	// Param describes the param the citizen gives when arming ("agent
	// name"); empty when the template needs none.
	Param string `json:"param,omitempty"`
	// ForCitizen makes the arming citizen's Matrix ID the param, so the
	// tripwire watches what concerns them (the "self" scope watches all).
	ForCitizen bool `json:"-"`
}

var templates = []Template{
	{
		ID: "vault-threshold", Label: "Vault approaching threshold",
		Rationale: "Starter template: get ready for the Seal moment when the vault nears its threshold.",
		Source:    core.SourceRef{Kind: "vault.balance"}, Condition: Condition{Op: OpGTE, Threshold: 45.0},
		Action: Action{Journal: true, Push: true}, CooldownSeconds: 24 * 3600,
	},
	{
		ID: "gi-yellow", Label: "GI below yellow band",
		Rationale: "Starter template: immediate notice when the substrate materially degrades.",
		Source:    core.SourceRef{Kind: "integrity.gi"}, Condition: Condition{Op: OpLT, Threshold: 0.70},
		Action: Action{Journal: true, Push: true}, CooldownSeconds: 3600,
	},
	{
		ID: "daedalus-self-ping", Label: "DAEDALUS-µ5 self-ping",
		Rationale: "Starter template: surface an infrastructure quirk without interrupting anyone.",
		Source:    core.SourceRef{Kind: "micro-agent.value", Param: "DAEDALUS-µ5"}, Condition: Condition{Op: OpLT, Threshold: 0.8},
		Action: Action{Journal: true}, CooldownSeconds: 6 * 3600,
	},
	{
		ID: "agent-offline", Label: "Agent goes offline",
		Rationale: "Starter template: know when an agent stops sending heartbeats.",
		Source:    core.SourceRef{Kind: "agent.status"}, Condition: Condition{Op: OpEQ, Threshold: "offline"},
		Action: Action{Journal: true, Push: true}, CooldownSeconds: 3600, Param: "agent name",
	},
	{
		ID: "breaker-open", Label: "Breaker opens for an agent",
		Rationale: "Starter template: know when an agent's circuit breaker halts it.",
		Source:    core.SourceRef{Kind: "breaker.state"}, Condition: Condition{Op: OpEQ, Threshold: "open"},
		Action: Action{Journal: true, Push: true}, CooldownSeconds: 3600, Param: "agent name",
	},
	{
		ID: "card-blocked", Label: "A card is blocked",
		Rationale: "Starter template: know when a card of the backlog cannot go on.",
		Source:    core.SourceRef{Kind: "cards.blocked"}, Condition: Condition{Op: OpGT, Threshold: 0.0},
		Action: Action{Journal: true, Push: true}, CooldownSeconds: 3600,
	},
	{
		ID: "card-decision", Label: "A card waits for your decision",
		Rationale: "Starter template: a worker is blocked until you answer its question.",
		Source:    core.SourceRef{Kind: "cards.needs_decision"}, Condition: Condition{Op: OpGT, Threshold: 0.0},
		Action: Action{Journal: true, Push: true}, CooldownSeconds: 3600, ForCitizen: true,
	},
}

// Templates lists the starter templates whose sources are registered.
func (s *Service) Templates() []Template {
	var out []Template
	for _, t := range templates {
		if _, ok := s.deps.Sources.Lookup(t.Source.Kind); ok {
			out = append(out, t)
		}
	}
	return out
}

// ArmTemplate arms a starter template in scope. param is the agent name for
// templates that watch one agent, and ignored otherwise; a template about
// the citizen's own decisions watches the citizen.
func (s *Service) ArmTemplate(ctx context.Context, scope, templateID, param string) (Definition, error) {
	var t *Template
	for _, c := range s.Templates() {
		if c.ID == templateID {
			t = &c
		}
	}
	if t == nil {
		return Definition{}, fmt.Errorf("tripwire template %q: %w", templateID, core.ErrNotFound)
	}
	label, src := t.Label, t.Source
	switch {
	case t.ForCitizen && scope != SelfScope:
		src.Param = scope
	case t.Param != "":
		param = strings.TrimSpace(param)
		if param == "" {
			return Definition{}, core.Invalid("param", "template %s needs the %s", t.ID, t.Param)
		}
		src.Param = param
		label = fmt.Sprintf("%s: %s", t.Label, param)
	}
	return s.Arm(ctx, scope, t.draft(label, src, t.Condition))
}

// draft is the template as a draft watching src with cond, labelled label.
func (t Template) draft(label string, src core.SourceRef, cond Condition) Draft {
	action, cooldown := t.Action, t.CooldownSeconds
	return Draft{Label: label, Rationale: t.Rationale, SourceTrust: core.TrustNative, Source: src, Condition: cond,
		Action: &action, CooldownSeconds: &cooldown}
}

// Starter is a template made ready for one person to arm with one tap.
type Starter struct {
	Template Template
	// Draft is what arming it arms; nil when the template watches one
	// agent and the fleet has none yet (it is armed by name instead).
	Draft *Draft
	// Left are the agents it leaves out: a condition watches at most
	// MaxSubConditions.
	Left []string
}

// Starters makes each template ready for scope to arm with one tap: a
// template about one agent watches any of the fleet's agents (the first
// MaxSubConditions of them), one about the person's own decisions watches
// scope's. Nothing is armed: a starter is only a draft.
func (s *Service) Starters(scope string, agents []string) []Starter {
	var out []Starter
	for _, t := range s.Templates() {
		st := Starter{Template: t}
		switch {
		case t.ForCitizen && scope != SelfScope:
			d := t.draft(t.Label, core.SourceRef{Kind: t.Source.Kind, Param: scope}, t.Condition)
			st.Draft = &d
		case t.Param == "":
			d := t.draft(t.Label, t.Source, t.Condition)
			st.Draft = &d
		case len(agents) == 1:
			d := t.draft(fmt.Sprintf("%s: %s", t.Label, agents[0]), core.SourceRef{Kind: t.Source.Kind, Param: agents[0]}, t.Condition)
			st.Draft = &d
		case len(agents) > 1:
			watched := agents[:min(len(agents), MaxSubConditions)]
			st.Left = agents[len(watched):]
			cond := Condition{Op: OpAny}
			for _, a := range watched {
				src := core.SourceRef{Kind: t.Source.Kind, Param: a}
				cond.Conditions = append(cond.Conditions, Condition{Op: t.Condition.Op, Threshold: t.Condition.Threshold, Source: &src})
			}
			d := t.draft(fmt.Sprintf("%s: %s", t.Label, strings.Join(watched, ", ")), core.SourceRef{Kind: t.Source.Kind, Param: watched[0]}, cond)
			st.Draft = &d
		}
		out = append(out, st)
	}
	return out
}
