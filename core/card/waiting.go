package card

import (
	"context"
	"fmt"
	"slices"
)

// WaitingOn returns the open questions put to person, oldest first.
func (c *Service) WaitingOn(ctx context.Context, person string) ([]Decision, error) {
	open, err := c.deps.Store.OpenDecisions(ctx)
	if err != nil {
		return nil, fmt.Errorf("open questions: %w", err)
	}
	return slices.DeleteFunc(open, func(d Decision) bool { return !slices.Contains(d.Asked, person) }), nil
}
