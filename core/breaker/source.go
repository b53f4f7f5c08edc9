package breaker

import (
	"context"

	"github.com/jarvis-hmi/jarvis/core"
)

// SourceState is the tripwire source kind of an agent's breaker.
const SourceState = "breaker.state"

// RegisterSources adds the breaker's tripwire source kind to r:
// breaker.state, an agent's breaker (closed, open, half-open), read for
// many agents at once as ResolveStates reads them.
func (b *Service) RegisterSources(r *core.SourceRegistry) {
	r.Register(core.SourceKind{
		Kind:        SourceState,
		Aliases:     []string{"breaker", "circuit breaker", "breaker state"},
		Description: "an agent's circuit breaker (closed, open, half-open)",
		Value:       core.ValueCategory,
		Categories:  []string{string(Closed), string(Open), string(HalfOpen)},
		Param:       "agent name",
		ParamType:   core.ParamAgent,
		Resolve: func(ctx context.Context, agent string) (core.Observation, error) {
			state, err := b.ResolveState(ctx, agent)
			return core.Observation{Value: state}, err
		},
		ResolveMany: func(ctx context.Context, agents []string) ([]core.Observation, []error) {
			states, errs := b.ResolveStates(ctx, agents)
			obs := make([]core.Observation, len(states))
			for i, state := range states {
				obs[i].Value = state
			}
			return obs, errs
		},
	})
}
