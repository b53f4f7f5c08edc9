package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// Kinds of the incidents the meter raises.
const (
	kindSpend     = "spend"
	kindCrashLoop = "crash-loop"
)

// endAlerts resolves the budget and crash-loop alerts whose cause ended:
// a crash loop when the agent has not restarted for the crash-loop
// window; a budget alert when its UTC day is over, or when the day's
// spend is back under the share that raised it (the budget was raised).
// Each resolves in a transaction of its own: its alert is edited to
// resolved, with one reply in its thread.
func (f *Service) endAlerts(ctx context.Context, now time.Time) error {
	if f.deps.Meter == nil {
		return nil
	}
	var errs []error
	for _, kind := range []string{kindCrashLoop, kindSpend} {
		open, err := f.deps.Incidents.Open(ctx, kind)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, inc := range open {
			said, over, err := f.ended(ctx, inc, now)
			if err == nil && over {
				err = f.deps.Tx.InTx(ctx, func(ctx context.Context) error { return f.deps.Incidents.Resolve(ctx, inc.ID, said) })
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("end alert %s: %w", inc.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// ended says whether what a budget or crash-loop incident reported is
// over, and what to say when it is.
func (f *Service) ended(ctx context.Context, inc oncall.Incident, now time.Time) (string, bool, error) {
	r := f.roster.Load()
	a, configured := r.byKey[strings.ToUpper(inc.Subject)]
	name := core.EscapeMarkdown(inc.Subject)
	if inc.Kind == kindCrashLoop {
		last, err := f.deps.Meter.LatestBoot(ctx, inc.Subject)
		if err != nil {
			return "", false, err
		}
		quiet := now.Sub(last.SeenAt)
		if r.crashLoop.Restarts != 0 && quiet < r.crashLoop.Window {
			return "", false, nil
		}
		return fmt.Sprintf("✅ **%s** has run without a restart for %s, since boot %s at %s: the crash loop is over.",
			name, core.HumanDuration(quiet), core.CodeSpan(last.ID), last.SeenAt.UTC().Format("15:04 MST")), true, nil
	}
	// A budget incident's ID ends with its day: spend:alert:EVE:2026-12-01.
	d := inc.ID[strings.LastIndexByte(inc.ID, ':')+1:]
	spent, err := f.deps.Meter.SpendOn(ctx, inc.Subject, d)
	if err != nil {
		return "", false, err
	}
	if d != day(now) {
		return fmt.Sprintf("✅ **%s**'s budget day %s is over, with %s spent: today's spend counts from zero.",
			name, d, money(spent.Cost, spent.Currency)), true, nil
	}
	limit := warnShare
	if strings.HasPrefix(inc.ID, kindSpend+":alert:") {
		limit = 1
	}
	if configured && a.Budget.Daily > 0 && spent.Cost/a.Budget.Daily >= limit {
		return "", false, nil
	}
	if !configured || a.Budget.Daily <= 0 {
		return fmt.Sprintf("✅ **%s** has no daily budget any more: %s spent today.", name, money(spent.Cost, spent.Currency)), true, nil
	}
	return fmt.Sprintf("✅ **%s** is back under its budget: %s spent today, %s of %s.", name,
		money(spent.Cost, a.Budget.Currency), percent(spent.Cost/a.Budget.Daily), money(a.Budget.Daily, a.Budget.Currency)), true, nil
}
