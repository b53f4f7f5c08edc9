package services

import (
	"context"
	"testing"

	"github.com/jarvis-hmi/jarvis/core/card"
)

// CardSpec is a valid card spec with the given goal and priority,
// depending on deps.
func CardSpec(goal string, p card.Priority, deps ...string) card.Spec {
	return card.Spec{Goal: goal, Acceptance: []string{goal + " is verified"}, Priority: p, DependsOn: deps}
}

// PublishOne publishes a one-card set of s under key, ratified by
// ratifiedBy (nobody when empty), and returns its card.
func PublishOne(tb testing.TB, c *card.Service, key string, s card.Spec, ratifiedBy string) card.Card {
	tb.Helper()
	set, err := c.Publish(context.Background(), card.SetInput{Key: key, Author: card.MainAgent, RatifiedBy: ratifiedBy,
		Cards: []card.Input{{Spec: s}}})
	if err != nil {
		tb.Fatalf("publish %s: %v", key, err)
	}
	return set.Cards[0]
}
