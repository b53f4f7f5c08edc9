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
	return s.Arm(ctx, scope, Draft{
		Label: label, Rationale: t.Rationale, Source: src, Condition: t.Condition,
		Action: &t.Action, CooldownSeconds: &t.CooldownSeconds,
	})
}
