// Package testconfig holds the configurations tests run the core services
// with. They are the defaults config.example.yaml gives, written out so that
// a test says what it runs with; cmd/jarvis checks that they still are.
package testconfig

import (
	"time"

	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// Tripwires ticks every 5 minutes and quarantines a tripwire after more
// than 6 fire/reset cycles within an hour or 12 failed passes in a row.
func Tripwires() tripwire.Config {
	return tripwire.Config{
		Tick:       5 * time.Minute,
		Quarantine: tripwire.QuarantineConfig{FlapCycles: 6, FlapWindow: time.Hour, SourceErrors: 12},
	}
}

// Breaker has no half-open timeout; critical observations of any severity,
// and high ones about safety, open a breaker.
func Breaker() breaker.Config {
	return breaker.Config{OpenOn: []breaker.Trigger{
		{Urgency: breaker.UrgencyCritical, Severity: breaker.SeverityAny},
		{Urgency: breaker.UrgencyHigh, Severity: breaker.SeveritySafety},
	}}
}

// Cards allows two P0 and ten P1 cards a day; P2 and P3 are unlimited.
func Cards() card.Config {
	return card.Config{Budget: map[string]card.BudgetRule{
		"P0": {Count: 2, Window: 24 * time.Hour},
		"P1": {Count: 10, Window: 24 * time.Hour},
	}}
}
