package coretest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jarvis-hmi/jarvis/core"
)

// Registry holds the kinds the core tests arm tripwires on, none of which
// can be read.
func Registry() *core.SourceRegistry {
	return registry(func(string) core.Resolver {
		return func(context.Context, string) (core.Observation, error) {
			return core.Observation{}, errors.New("not wired")
		}
	})
}

// registry holds the kinds of Registry, each read by resolve(kind).
func registry(resolve func(kind string) core.Resolver) *core.SourceRegistry {
	return core.NewSourceRegistry(
		core.SourceKind{Kind: "integrity.gi", Aliases: []string{"GI", "global integrity"}, Value: core.ValueRatio, Resolve: resolve("integrity.gi")},
		core.SourceKind{Kind: "vault.balance", Value: core.ValueNumber, Resolve: resolve("vault.balance")},
		core.SourceKind{Kind: "lane.sentiment", Value: core.ValueText, Resolve: resolve("lane.sentiment")},
		core.SourceKind{Kind: "micro-agent.value", Value: core.ValueNumber, Param: "micro-agent name", ParamType: core.ParamName,
			Resolve: resolve("micro-agent.value")},
		core.SourceKind{Kind: "agent.status", Value: core.ValueCategory, Categories: []string{"online", "late", "offline"},
			Param: "agent name", ParamType: core.ParamAgent, Resolve: resolve("agent.status")},
		core.SourceKind{Kind: "breaker.state", Value: core.ValueCategory, Categories: []string{"closed", "open", "half-open"},
			Param: "agent name", ParamType: core.ParamAgent, Resolve: resolve("breaker.state")},
		core.SourceKind{Kind: "cards.needs_decision", Value: core.ValueCount, Param: "whose decision", ParamType: core.ParamUser,
			ParamOptional: true, Resolve: resolve("cards.needs_decision")},
	)
}

// Sources are the values of the kinds of Registry, which a test sets, by
// kind or kind[param] (core.SourceRef.String). A read of a source with no
// value fails; a read of one observes its key as "seen" in its context.
// It is safe for concurrent use.
type Sources struct {
	mu     sync.Mutex
	values map[string]any
	errs   map[string]error
	reads  map[string]int
}

// NewSources returns sources with no values.
func NewSources() *Sources {
	return &Sources{values: map[string]any{}, errs: map[string]error{}, reads: map[string]int{}}
}

// Set gives the source key the value v, from now on.
func (s *Sources) Set(key string, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[key] = v
	delete(s.errs, key)
}

// Fail has reads of the source key fail with err until it is Set.
func (s *Sources) Fail(key string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs[key] = err
}

// Reads is how many times the source key was read.
func (s *Sources) Reads(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[key]
}

// Registry holds the kinds of Registry, read from s.
func (s *Sources) Registry() *core.SourceRegistry {
	return registry(func(kind string) core.Resolver {
		return func(_ context.Context, param string) (core.Observation, error) {
			key := core.SourceRef{Kind: kind, Param: param}.String()
			s.mu.Lock()
			defer s.mu.Unlock()
			s.reads[key]++
			if err := s.errs[key]; err != nil {
				return core.Observation{}, err
			}
			v, ok := s.values[key]
			if !ok {
				return core.Observation{}, fmt.Errorf("no value for %s", key)
			}
			return core.Observation{Value: v, Context: map[string]any{"seen": key}}, nil
		}
	})
}
