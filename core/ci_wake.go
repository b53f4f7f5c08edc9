package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
func CIFailureConditions(ctx context.Context, fleet *Fleet, cards *Cards) ([]WakeCondition, error) {
	var out []WakeCondition
	for _, a := range fleet.Agents() {
		cycle, _, err := fleet.deps.Journal.LatestJournal(ctx, a.Name)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		entries, err := fleet.deps.Journal.JournalEntries(ctx, a.Name, cycle)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			for _, ev := range e.Evidence {
				if ev.Type != EvidenceCI || !strings.EqualFold(fmt.Sprint(ev.Value), EvidenceCIFailed) || ev.Key == "" {
					continue
				}
				card, err := cards.Get(ctx, ev.Key)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				if card.RatifiedBy == "" {
					continue
				}
				out = append(out, WakeCondition{
					Key: "ci-failed:" + card.ID, Source: "journal of " + a.Name,
					EventID: fmt.Sprintf("%s/%s/%s", a.Name, e.Cycle, e.EntryID),
					Title:   "CI failed on a card you ratified",
					Fields: []WakeField{{Name: "card", Value: card.ID}, {Name: "goal", Value: card.Spec.Goal},
						{Name: "entry", Value: e.Title}, {Name: "run", Value: ev.URL}},
					Mentions: []string{card.RatifiedBy},
				})
			}
		}
	}
	return out, nil
}
