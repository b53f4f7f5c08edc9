package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Spend is what an agent says it spent since its last heartbeat, metered
// per day against the agent's daily budget.
type Spend struct {
	TokensIn  int64
	TokensOut int64
	// Cost is in Currency, an ISO 4217 code such as USD.
	Cost     float64
	Currency string
}

// DaySpend is an agent's spend over one UTC day, and what the room was
// told of it.
type DaySpend struct {
	Spend
	// Warned and Alerted say that the 80 % warning and the 100 % alert of
	// the day's budget were posted.
	Warned  bool
	Alerted bool
}

// Boot is one process of an agent, as its heartbeats' boot_id names it.
type Boot struct {
	ID     string
	SeenAt time.Time
	// Restart is true when the boot replaced an earlier one.
	Restart bool
	// Alerted is true when this boot's arrival raised the crash-loop alert.
	Alerted bool
}

// MeterStore keeps agents' spend per day and their boots.
type MeterStore interface {
	// AddSpend adds s to the agent's spend on day (YYYY-MM-DD, UTC) and
	// returns the day's total.
	AddSpend(ctx context.Context, agent, day string, s Spend) (DaySpend, error)
	// SpendOn returns the agent's spend on day, zero when it spent nothing.
	SpendOn(ctx context.Context, agent, day string) (DaySpend, error)
	// SpendsOn returns the spend on day of each of the agents that spent
	// something.
	SpendsOn(ctx context.Context, day string, agents []string) (map[string]DaySpend, error)
	// MarkSpend records that the day's warning (and alert, when alerted)
	// was posted.
	MarkSpend(ctx context.Context, agent, day string, warned, alerted bool) error
	// LatestBoot returns the agent's most recent boot, or ErrNotFound.
	LatestBoot(ctx context.Context, agent string) (Boot, error)
	// AddBoot records a boot; a boot id the agent had before is not added
	// again.
	AddBoot(ctx context.Context, agent string, b Boot) error
	// BootsSince returns the agent's boots first seen at or after since.
	BootsSince(ctx context.Context, agent string, since time.Time) ([]Boot, error)
	// RestartsSince counts, for each of the agents, its boots first seen
	// at or after since that were restarts; an agent with none is left
	// out.
	RestartsSince(ctx context.Context, since time.Time, agents []string) (map[string]int, error)
}

// Budget is an agent's daily spend budget.
type Budget struct {
	// Daily is how much the agent may spend in a UTC day, in Currency; 0
	// sets no budget.
	Daily    float64
	Currency string
}

// CrashLoop says when an agent's restarts are a crash loop: Restarts new
// boot ids within Window.
type CrashLoop struct {
	Restarts int
	Window   time.Duration
}

// Validate checks the crash-loop rule.
func (c CrashLoop) Validate() error {
	switch {
	case c.Restarts < 2:
		return core.Invalid("fleet.crash_loop.restarts", "must be at least 2, got %d", c.Restarts)
	case c.Window < time.Minute:
		return core.Invalid("fleet.crash_loop.window", "must be at least 1m, got %s", c.Window)
	}
	return nil
}

// Limits on what a heartbeat meters.
const (
	MaxBootIDLen = 128
	// warnShare of a day's budget draws the warning.
	warnShare = 0.8
)

var currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)

// validateMeter checks a heartbeat's spend and boot id against the
// agent's budget.
func validateMeter(hb Heartbeat, a AgentConfig) error {
	if len(hb.BootID) > MaxBootIDLen || strings.ContainsAny(hb.BootID, " \t\r\n") {
		return core.Invalid("boot_id", "must be at most %d characters without spaces", MaxBootIDLen)
	}
	s := hb.Spend
	if s == nil {
		return nil
	}
	switch {
	case s.TokensIn < 0 || s.TokensOut < 0:
		return core.Invalid("spend", "token counts must not be negative")
	case math.IsNaN(s.Cost) || math.IsInf(s.Cost, 0) || s.Cost < 0 || s.Cost > 1e9:
		return core.Invalid("spend.cost", "must be a number from 0 to 1e9, not %v", s.Cost)
	case s.Cost > 0 && !currencyPattern.MatchString(s.Currency):
		return core.Invalid("spend.currency", "must be an ISO 4217 code such as USD, not %q", s.Currency)
	case s.Cost > 0 && a.Budget.Daily > 0 && s.Currency != a.Budget.Currency:
		return core.Invalid("spend.currency", "%s's budget is in %s, not %s", a.Name, a.Budget.Currency, s.Currency)
	}
	return nil
}

// meterKey identifies a heartbeat by what it meters: its cycle, its
// timestamp, its boot id and its spend. A retry carries the same; the
// agent's next heartbeat has a later timestamp.
func meterKey(hb Heartbeat) string {
	var s Spend
	if hb.Spend != nil {
		s = *hb.Spend
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\n%d\n%s\n%d\n%d\n%v\n%s", hb.Cycle, hb.Timestamp.UnixNano(), hb.BootID,
		s.TokensIn, s.TokensOut, s.Cost, s.Currency))
	return hex.EncodeToString(sum[:16])
}

// day is the UTC day a time falls on, as the spend is kept.
func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// meter records a heartbeat's spend and boot id inside its transaction:
// the day's spend crossing 80 % of the agent's budget warns once, 100 %
// alerts once; a new boot id is a restart, and Restarts of them within
// Window is a crash loop, announced to the admins once per loop.
func (f *Service) meter(ctx context.Context, a AgentConfig, hb Heartbeat) error {
	if f.deps.Meter == nil {
		return nil
	}
	if hb.Spend != nil {
		if err := f.meterSpend(ctx, a, hb); err != nil {
			return err
		}
	}
	if hb.BootID != "" {
		return f.meterBoot(ctx, a, hb)
	}
	return nil
}

func (f *Service) meterSpend(ctx context.Context, a AgentConfig, hb Heartbeat) error {
	d := day(hb.ReceivedAt)
	total, err := f.deps.Meter.AddSpend(ctx, a.Name, d, *hb.Spend)
	if err != nil || a.Budget.Daily <= 0 {
		return err
	}
	share := total.Cost / a.Budget.Daily
	var n core.Notice
	switch {
	case share >= 1 && !total.Alerted:
		n = core.Notice{Key: fmt.Sprintf("spend:alert:%s:%s", a.Name, d), Body: fmt.Sprintf(
			"🚨 **%s** has spent %s today, %s of its daily budget of %s.", core.EscapeMarkdown(a.Name),
			money(total.Cost, a.Budget.Currency), percent(share), money(a.Budget.Daily, a.Budget.Currency))}
		total.Warned, total.Alerted = true, true
	case share >= warnShare && !total.Warned:
		n = core.Notice{Key: fmt.Sprintf("spend:warn:%s:%s", a.Name, d), Body: fmt.Sprintf(
			"⚠️ **%s** has spent %s today, %s of its daily budget of %s.", core.EscapeMarkdown(a.Name),
			money(total.Cost, a.Budget.Currency), percent(share), money(a.Budget.Daily, a.Budget.Currency))}
		total.Warned = true
	default:
		return nil
	}
	if core.ReadsLocked(ctx) {
		// A budget notice: raised at full isolation.
		return core.ErrBeyondLockedReads
	}
	n.RoomID, n.Kind, n.Mentions = f.deps.Room, core.NoticeMessage, f.deps.Admins
	if err := f.deps.Incidents.Raise(ctx, n.Key, kindSpend, a.Name, n); err != nil {
		return err
	}
	return f.deps.Meter.MarkSpend(ctx, a.Name, d, total.Warned, total.Alerted)
}

func (f *Service) meterBoot(ctx context.Context, a AgentConfig, hb Heartbeat) error {
	last, err := f.deps.Meter.LatestBoot(ctx, a.Name)
	switch {
	case errors.Is(err, core.ErrNotFound):
	case err != nil:
		return err
	case last.ID == hb.BootID:
		return nil
	}
	if core.ReadsLocked(ctx) {
		// A new boot: restarts are counted at full isolation.
		return core.ErrBeyondLockedReads
	}
	boot := Boot{ID: hb.BootID, SeenAt: hb.ReceivedAt, Restart: err == nil}
	loop := f.roster.Load().crashLoop
	if loop.Restarts == 0 {
		return f.deps.Meter.AddBoot(ctx, a.Name, boot)
	}
	since := hb.ReceivedAt.Add(-loop.Window)
	boots, err := f.deps.Meter.BootsSince(ctx, a.Name, since)
	if err != nil {
		return err
	}
	restarts, alerted := 0, false
	for _, b := range append(boots, boot) {
		if b.Restart {
			restarts++
		}
		alerted = alerted || b.Alerted
	}
	if restarts >= loop.Restarts && !alerted {
		boot.Alerted = true
		key := fmt.Sprintf("crash-loop:%s:%s", a.Name, hb.BootID)
		if err := f.deps.Incidents.Raise(ctx, key, kindCrashLoop, a.Name, core.Notice{Key: key, RoomID: f.deps.Room,
			Kind: core.NoticeMessage, Mentions: f.deps.Admins, Body: fmt.Sprintf(
				"🚨 **Crash loop: %s** has restarted %d times in %s (a new boot id each time; the last, %s, at %s). "+
					"This is not a routine restart: look at it before it burns more of its budget, and open its breaker to stop it.",
				core.EscapeMarkdown(a.Name), restarts, core.HumanDuration(loop.Window), core.CodeSpan(hb.BootID),
				hb.ReceivedAt.UTC().Format("15:04 MST"))}); err != nil {
			return err
		}
	}
	return f.deps.Meter.AddBoot(ctx, a.Name, boot)
}

func money(v float64, currency string) string {
	return strings.TrimSpace(fmt.Sprintf("%.2f %s", v, currency))
}

func percent(share float64) string { return fmt.Sprintf("%.0f %%", 100*share) }
