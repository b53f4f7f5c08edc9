package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Tripwire source kinds the fleet provides; each takes an agent name as
// its param.
const (
	SourceAgentStatus       = "agent.status"
	SourceAgentMII          = "agent.mii"
	SourceAgentMode         = "agent.mode"
	SourceAgentHeartbeatAge = "agent.heartbeat_age"
	SourceAgentJournalCount = "agent.journal_count"
	SourceAgentSpendToday   = "agent.spend_today"
	SourceAgentCrashLoop    = "agent.crash_loop"
	SourceAgentSilence      = "agent.silence"
)

// SourceKinds lists the source kinds RegisterSources adds, for
// re-evaluating the tripwires that read them when the fleet changes.
var SourceKinds = []string{SourceAgentStatus, SourceAgentMII, SourceAgentMode, SourceAgentHeartbeatAge, SourceAgentJournalCount,
	SourceAgentSpendToday, SourceAgentCrashLoop, SourceAgentSilence}

// RegisterSources adds the fleet's tripwire source kinds to r:
// agent.status ("online", "late" or "offline"), agent.mii (0 to 1),
// agent.mode ("green", "yellow" or "red"), agent.heartbeat_age (seconds
// since the last heartbeat), agent.journal_count (entries in the current
// cycle), agent.spend_today (what it spent today, in its budget's
// currency), agent.crash_loop (its restarts within the crash-loop
// window) and agent.silence (seconds since its last heartbeat or, before
// its first, since it was first expected: Jarvis's start or the reload
// that added it). An agent never heard from has a status, a journal
// count, a spend, restarts and a silence; its other kinds are a source
// error (ErrNotFound) until it reports.
func (f *Service) RegisterSources(r *core.SourceRegistry) {
	kinds := []struct {
		kind, description string
		aliases           []string
		value             core.ValueType
		categories        []string
	}{
		{SourceAgentStatus, "whether an agent is online, late or offline, from its heartbeats", []string{"agent status", "status"},
			core.ValueCategory, []string{string(PresenceOnline), string(PresenceLate), string(PresenceOffline)}},
		{SourceAgentMII, "the MII an agent reported in its last heartbeat (0 to 1)", []string{"agent MII", "MII"}, core.ValueRatio, nil},
		{SourceAgentMode, "the mode an agent reported in its last heartbeat: green, yellow or red", []string{"agent mode", "mode"},
			core.ValueCategory, []string{"green", "yellow", "red"}},
		{SourceAgentHeartbeatAge, "seconds since an agent's last heartbeat", []string{"heartbeat age", "last heartbeat"}, core.ValueSeconds, nil},
		{SourceAgentJournalCount, "how many journal entries an agent wrote in its current cycle", []string{"journal count", "journal entries"}, core.ValueCount, nil},
		{SourceAgentSpendToday, "what an agent spent today (UTC), from its heartbeats", []string{"spend today", "spend", "cost today"}, core.ValueNumber, nil},
		{SourceAgentCrashLoop, "how many times an agent restarted within the crash-loop window", []string{"crash loop", "restarts"}, core.ValueCount, nil},
		{SourceAgentSilence, "seconds since an agent last reported (since it was first expected, if it never has)", []string{"silence", "time since last report"},
			core.ValueSeconds, nil},
	}
	for _, k := range kinds {
		r.Register(core.SourceKind{
			Kind:        k.kind,
			Aliases:     k.aliases,
			Description: k.description,
			Value:       k.value,
			Categories:  k.categories,
			Param:       "agent name",
			ParamType:   core.ParamAgent,
			CheckParam: func(param string) error {
				if _, err := f.lookupAgent("param", param); err != nil {
					return fmt.Errorf("%q is not a configured agent", param)
				}
				return nil
			},
			Resolve: func(ctx context.Context, param string) (core.Observation, error) {
				return f.observe(ctx, k.kind, param)
			},
			ResolveMany: func(ctx context.Context, params []string) ([]core.Observation, []error) {
				return f.observeMany(ctx, k.kind, params)
			},
		})
	}
}

// fleetView is every configured agent's row as of one moment, which the
// fleet's source kinds share within an evaluator pass.
type fleetView struct {
	roster *roster
	now    time.Time
	rows   map[string]AgentReport // by upper-cased name
}

// view reads every configured agent's row, once per evaluator pass
// (core.Memo): the eight kinds of a pass cost a few queries together,
// however many agents and kinds the tripwires read.
func (f *Service) view(ctx context.Context) (fleetView, error) {
	return core.Memo(ctx, "fleet.view", func() (fleetView, error) {
		v := fleetView{roster: f.roster.Load(), now: f.deps.Clock.Now()}
		rows, err := f.reports(ctx, v.roster, v.now, nil)
		if err != nil {
			return v, err
		}
		v.rows = make(map[string]AgentReport, len(rows))
		for _, r := range rows {
			v.rows[strings.ToUpper(r.Agent)] = r
		}
		return v, nil
	})
}

// observeMany reads one fleet source kind for many agents from the pass's
// view.
func (f *Service) observeMany(ctx context.Context, kind string, agents []string) ([]core.Observation, []error) {
	obs, errs := make([]core.Observation, len(agents)), make([]error, len(agents))
	v, viewErr := f.view(ctx)
	for i, agent := range agents {
		a, err := v.roster.lookup("param", agent)
		switch {
		case err != nil:
			errs[i] = err
		case viewErr != nil:
			errs[i] = fmt.Errorf("%s[%s]: %w", kind, a.Name, viewErr)
		default:
			key := strings.ToUpper(a.Name)
			obs[i], errs[i] = observation(kind, v.rows[key], v.now.Sub(v.roster.since[key]))
		}
	}
	return obs, errs
}

// observe reads one fleet source kind for one agent.
func (f *Service) observe(ctx context.Context, kind, agent string) (core.Observation, error) {
	ros, now := f.roster.Load(), f.deps.Clock.Now()
	a, err := ros.lookup("param", agent)
	if err != nil {
		return core.Observation{}, err
	}
	rows, err := f.reports(ctx, ros, now, []AgentConfig{a})
	if err != nil {
		return core.Observation{}, fmt.Errorf("%s[%s]: %w", kind, a.Name, err)
	}
	return observation(kind, rows[0], now.Sub(ros.since[strings.ToUpper(a.Name)]))
}

// observation is what a fleet source kind shows of an agent's row;
// expected is how long the agent has been expected to report.
func observation(kind string, r AgentReport, expected time.Duration) (core.Observation, error) {
	reported := r.Reported
	obs := core.Observation{Context: map[string]any{"agent": r.Agent, "status": string(r.Presence)}}
	if reported {
		obs.Context["cycle"] = r.Cycle
		obs.Context["heartbeat_last_at"] = r.LastAt.UTC().Format(time.RFC3339)
		obs.Context["missed_heartbeats"] = float64(r.Missed)
	}
	switch kind {
	case SourceAgentStatus:
		obs.Value, obs.Display = string(r.Presence), string(r.Presence)
		if r.Missed > 0 {
			obs.Display = fmt.Sprintf("%s (%s missed)", r.Presence, core.Plural(r.Missed, "heartbeat", "heartbeats"))
		}
		return obs, nil
	case SourceAgentJournalCount:
		obs.Value, obs.Display = float64(r.JournalCount), core.Plural(r.JournalCount, "journal entry", "journal entries")+" this cycle"
		return obs, nil
	case SourceAgentSpendToday:
		obs.Value, obs.Display = r.SpendToday.Cost, money(r.SpendToday.Cost, r.SpendToday.Currency)+" today"
		return obs, nil
	case SourceAgentCrashLoop:
		obs.Value, obs.Display = float64(r.Restarts), core.Plural(r.Restarts, "restart", "restarts")+" in the crash-loop window"
		return obs, nil
	case SourceAgentSilence:
		if reported {
			obs.Value, obs.Display = r.Age.Seconds(), "silent for "+core.HumanDuration(r.Age)
			return obs, nil
		}
		obs.Value, obs.Display = expected.Seconds(), "never reported, expected for "+core.HumanDuration(expected)
		return obs, nil
	}
	if !reported {
		return core.Observation{}, fmt.Errorf("%s[%s]: the agent has not reported yet: %w", kind, r.Agent, core.ErrNotFound)
	}
	switch kind {
	case SourceAgentMII:
		obs.Value, obs.Display = r.MII, fmt.Sprintf("%.2f", r.MII)
	case SourceAgentMode:
		obs.Value, obs.Display = r.Mode, r.Mode
	default: // SourceAgentHeartbeatAge
		obs.Value, obs.Display = r.Age.Seconds(), core.HumanDuration(r.Age)+" ago"
	}
	return obs, nil
}
