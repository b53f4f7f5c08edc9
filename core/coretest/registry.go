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
		core.SourceKind{Kind: "integrity.gi", Aliases: []string{"GI", "global integrity"}, Resolve: none},
		core.SourceKind{Kind: "vault.balance", Resolve: none},
		core.SourceKind{Kind: "lane.sentiment", Resolve: none},
		core.SourceKind{Kind: "micro-agent.value", Param: "micro-agent name", Resolve: none},
		core.SourceKind{Kind: "agent.status", Param: "agent name", Resolve: none},
		core.SourceKind{Kind: "breaker.state", Param: "agent name", Resolve: none},
		core.SourceKind{Kind: "cards.needs_decision", Param: "whose decision", ParamOptional: true, Resolve: none},
	)
}
