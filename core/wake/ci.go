package wake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// CI failures are reported by agents as journal evidence
// {type: "ci", key: <card id>, value: "failed", url: <run>}.
const (
	EvidenceCI       = "ci"
	EvidenceCIFailed = "failed"
)

// CIFailureConditions finds CI failures that agents reported in their
// current cycle's journal against cards a person ratified, for the
// event/wake router. Each journal entry is its own source event, surfaced
// once.
func CIFailureConditions(ctx context.Context, fleet *fleet.Service, cards *card.Service) ([]core.WakeCondition, error) {
	agents := fleet.Agents()
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	current, err := fleet.CurrentEvidence(ctx, names, EvidenceCI)
	if err != nil {
		return nil, err
	}
	var out []core.WakeCondition
	for _, a := range agents {
		for _, e := range current[a.Name] {
			for _, ev := range e.Evidence {
				if ev.Type != EvidenceCI || !strings.EqualFold(fmt.Sprint(ev.Value), EvidenceCIFailed) || ev.Key == "" {
					continue
				}
				card, err := cards.Get(ctx, ev.Key)
				if errors.Is(err, core.ErrNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				if card.RatifiedBy == "" {
					continue
				}
				out = append(out, core.WakeCondition{
					Key: "ci-failed:" + card.ID, Source: "journal of " + a.Name,
					EventID: fmt.Sprintf("%s/%s/%s", a.Name, e.Cycle, e.EntryID),
					Title:   "CI failed on a card you ratified",
					Fields: []core.WakeField{{Name: "card", Value: card.ID}, {Name: "goal", Value: card.Spec.Goal},
						{Name: "entry", Value: e.Title}, {Name: "run", Value: ev.URL}},
					Mentions: []string{card.RatifiedBy},
					Alert:    true,
				})
			}
		}
	}
	return out, nil
}
