package coretest

import (
	"context"
	"errors"

	"github.com/jarvis-hmi/jarvis/core"
)

// Registry holds the kinds the core tests arm tripwires on.
func Registry() *core.SourceRegistry {
	none := func(context.Context, string) (core.Observation, error) {
		return core.Observation{}, errors.New("not wired")
	}
	return core.NewSourceRegistry(
		core.SourceKind{Kind: "integrity.gi", Aliases: []string{"GI", "global integrity"}, Value: core.ValueRatio, Resolve: none},
		core.SourceKind{Kind: "vault.balance", Value: core.ValueNumber, Resolve: none},
		core.SourceKind{Kind: "lane.sentiment", Value: core.ValueText, Resolve: none},
		core.SourceKind{Kind: "micro-agent.value", Value: core.ValueNumber, Param: "micro-agent name", ParamType: core.ParamName, Resolve: none},
		core.SourceKind{Kind: "agent.status", Value: core.ValueCategory, Categories: []string{"online", "late", "offline"},
			Param: "agent name", ParamType: core.ParamAgent, Resolve: none},
		core.SourceKind{Kind: "breaker.state", Value: core.ValueCategory, Categories: []string{"closed", "open", "half-open"},
			Param: "agent name", ParamType: core.ParamAgent, Resolve: none},
		core.SourceKind{Kind: "cards.needs_decision", Value: core.ValueCount, Param: "whose decision", ParamType: core.ParamUser,
			ParamOptional: true, Resolve: none},
	)
}
