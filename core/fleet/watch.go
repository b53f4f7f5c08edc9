package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
)

// AgentPresence is what the fleet watcher makes of an agent's heartbeats.
type AgentPresence string

const (
	// PresenceOnline means the agent's next heartbeat is not yet due.
	PresenceOnline AgentPresence = "online"
	// PresenceLate means one or two expected heartbeats were missed.
	PresenceLate AgentPresence = "late"
	// PresenceOffline means three or more were missed (or the agent never
	// reported); the agent is left out of attestation quorum.
	PresenceOffline AgentPresence = "offline"
)

// Misses at which the watcher speaks.
const (
	// AlertMisses consecutive missed heartbeats raise an alert.
	AlertMisses = 2
	// OfflineMisses consecutive missed heartbeats mark an agent offline.
	OfflineMisses = 3
)

// What the room was last told about an agent (FleetAgentState.Announced).
const (
	announcedAlert   = "alert"
	announcedOffline = "offline"
)

// announcedRank orders announcements so that the watcher only ever
// escalates; only a heartbeat clears them.
var announcedRank = map[string]int{"": 0, announcedAlert: 1, announcedOffline: 2}

// missedHeartbeats counts the expected heartbeats that did not come by now:
// the first is due at NextExpectedBy, each next one a cadence later, and one
// counts as missed once its deadline has passed.
func missedHeartbeats(st AgentState, cadence time.Duration, now time.Time) int {
	if st.LastAt.IsZero() || !now.After(st.NextExpectedBy) {
		return 0
	}
	return 1 + int((now.Sub(st.NextExpectedBy)-1)/cadence)
}

// presenceOf says whether an agent with the given misses is online, late
// or offline.
func presenceOf(missed int) AgentPresence {
	switch {
	case missed >= OfflineMisses:
		return PresenceOffline
	case missed > 0:
		return PresenceLate
	default:
		return PresenceOnline
	}
}

// announcementFor is what the room should have been told at this many misses.
func announcementFor(missed int) string {
	switch {
	case missed >= OfflineMisses:
		return announcedOffline
	case missed >= AlertMisses:
		return announcedAlert
	default:
		return ""
	}
}

// Sweep checks every configured agent's heartbeats against the clock once:
// two consecutive misses raise an alert in the room, a third marks the agent
// offline. Each announcement is made once per state change and recorded with
// the notice in one transaction, so a restart does not repeat it. Agents
// are swept after those they depend on, so that a dependant's silence
// folds into their alert. Budget and crash-loop alerts whose cause ended
// resolve. It first reads the agents added over the API or the CLI, by
// this Jarvis or another process on the same database.
func (f *Service) Sweep(ctx context.Context) error {
	if err := f.ReadAgents(ctx); err != nil {
		return fmt.Errorf("sweep fleet: %w", err)
	}
	now := f.deps.Clock.Now()
	states, err := f.deps.Heartbeats.AgentStates(ctx)
	if err != nil {
		return fmt.Errorf("sweep fleet: %w", err)
	}
	byAgent := map[string]AgentState{}
	for _, st := range states {
		byAgent[st.Agent] = st
	}
	var errs []error
	var due, never []AgentConfig
	r := f.roster.Load()
	for _, key := range r.deps.order {
		a := r.byKey[key]
		st, ok := byAgent[a.Name]
		if !ok {
			if f.neverDue(a, r.since[key], now) {
				never = append(never, a)
			}
			continue
		}
		if announcedRank[announcementFor(missedHeartbeats(st, a.Cadence, now))] > announcedRank[st.Announced] && !now.Before(st.GraceUntil) {
			due = append(due, a)
		}
	}
	escalated := len(due)+len(never) > 0
	if escalated {
		// One transaction for the sweep's announcements: an alert that
		// others fold or group into is edited once, with all of them.
		err := f.deps.Tx.InTx(ctx, func(ctx context.Context) error {
			var redraw []string
			for _, a := range never {
				parent, err := f.raiseNever(ctx, a, neverNotice(f.deps.Room, a, r.since[strings.ToUpper(a.Name)]), now)
				if err != nil {
					return fmt.Errorf("sweep %s: %w", a.Name, err)
				}
				if parent != "" && !slices.Contains(redraw, parent) {
					redraw = append(redraw, parent)
				}
			}
			for _, a := range due {
				parent, err := f.escalate(ctx, a, now)
				if err != nil {
					return fmt.Errorf("sweep %s: %w", a.Name, err)
				}
				if parent != "" && !slices.Contains(redraw, parent) {
					redraw = append(redraw, parent)
				}
			}
			for _, id := range redraw {
				if err := f.redraw(ctx, id); err != nil {
					return fmt.Errorf("sweep: edit the alert of %s: %w", id, err)
				}
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
			escalated = false
			for _, a := range never {
				f.silent.Delete(strings.ToUpper(a.Name))
			}
		}
	}
	if escalated {
		f.changed()
	}
	if err := f.endAlerts(ctx, now); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// neverDue reports whether the sweep should alert, once, about an agent
// that has not reported by the end of its first expected window (its
// cadence and grace, or its schedule's next run and grace), counted
// from since (Jarvis's start, or the reload that added the agent). Its
// incident makes it once per agent across restarts; silent, marked here,
// saves reading that at every sweep.
func (f *Service) neverDue(a AgentConfig, since, now time.Time) bool {
	if !now.After(nextExpected(a, Heartbeat{ReceivedAt: since})) {
		return false
	}
	_, done := f.silent.LoadOrStore(strings.ToUpper(a.Name), true)
	return !done
}

// neverNotice tells the room an agent has never reported.
func neverNotice(room string, a AgentConfig, since time.Time) core.Notice {
	return core.Notice{Key: neverKeyPrefix + a.Name, RoomID: room, Kind: core.NoticeMessage, Body: fmt.Sprintf(
		"⚠️ **%s** has never reported: its first heartbeat was expected within %s of %s, and none came. Is it running, with its token?",
		core.EscapeMarkdown(a.Name), core.HumanDuration(a.Cadence), core.TimeText(since))}
}

// escalate re-reads the agent's state inside the transaction (a heartbeat
// may have just arrived) and announces its silence if still warranted. A
// silence folded or grouped into another alert returns that alert's
// incident, for the caller to edit once all are in.
func (f *Service) escalate(ctx context.Context, a AgentConfig, now time.Time) (string, error) {
	st, err := f.deps.Heartbeats.AgentState(ctx, a.Name)
	if err != nil {
		return "", err
	}
	missed := missedHeartbeats(st, a.Cadence, now)
	want := announcementFor(missed)
	if announcedRank[want] <= announcedRank[st.Announced] || now.Before(st.GraceUntil) {
		return "", nil
	}
	if st.Announced == "" {
		st.Incident++
	}
	parent, err := f.raiseSilence(ctx, a, st, want, silenceNotice(f.deps.Room, st, a, want, missed, now), now)
	if err != nil {
		return "", err
	}
	st.Announced = want
	if err := f.deps.Heartbeats.PutAgentStates(ctx, st); err != nil {
		return "", err
	}
	status := PresenceLate
	if want == announcedOffline {
		status = PresenceOffline
	}
	return parent, f.addReadings(ctx, history.Reading{Source: core.SourceRef{Kind: SourceAgentStatus, Param: a.Name}, At: now, Value: string(status)})
}

// Watch sweeps now and then every interval until ctx ends. A failed sweep
// is reported to onErr and retried at the next tick.
func (f *Service) Watch(ctx context.Context, every time.Duration, onErr func(error)) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		if err := f.Sweep(ctx); err != nil && ctx.Err() == nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Quorum lists the configured agents that count toward attestation quorum:
// those that have reported and are not offline.
func (f *Service) Quorum(ctx context.Context) ([]string, error) {
	states, err := f.deps.Heartbeats.AgentStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet quorum: %w", err)
	}
	byAgent := map[string]AgentState{}
	for _, st := range states {
		byAgent[st.Agent] = st
	}
	now := f.deps.Clock.Now()
	quorum := []string{}
	for _, a := range f.roster.Load().agents {
		if st, ok := byAgent[a.Name]; ok && presenceOf(missedHeartbeats(st, a.Cadence, now)) != PresenceOffline {
			quorum = append(quorum, a.Name)
		}
	}
	return quorum, nil
}

// silenceIncident names the incident of an agent's silence number n: its
// alert and, when it goes on, its offline notice.
func silenceIncident(agent string, n int) string {
	return fmt.Sprintf("%s%s:%d", silencePrefix, agent, n)
}

// IncidentOf names the incident a fleet notice raised, from the notice's
// key: false for a notice that raised none.
func IncidentOf(noticeKey string) (string, bool) {
	if agent, ok := strings.CutPrefix(noticeKey, neverKeyPrefix); ok && agent != "" && !strings.Contains(agent, ":") {
		return neverIncident(agent), true
	}
	rest, ok := strings.CutPrefix(noticeKey, "fleet:"+announcedAlert+":")
	if !ok {
		rest, ok = strings.CutPrefix(noticeKey, "fleet:"+announcedOffline+":")
	}
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 {
		return "", false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil {
		return "", false
	}
	return silenceIncident(rest[:i], n), true
}

// silenceNotice tells the room an agent missed heartbeats (alert) or
// went offline.
func silenceNotice(room string, st AgentState, a AgentConfig, announced string, missed int, now time.Time) core.Notice {
	last := fmt.Sprintf("last heard %s ago (cycle %s), expected every %s", core.HumanDuration(now.Sub(st.LastAt)), core.EscapeMarkdown(st.Cycle), core.HumanDuration(a.Cadence))
	n := core.Notice{
		Key:    fmt.Sprintf("fleet:%s:%s:%d", announced, st.Agent, st.Incident),
		RoomID: room,
		Kind:   core.NoticeMessage,
	}
	if announced == announcedOffline {
		n.Body = fmt.Sprintf("🔴 **%s** is offline: %d heartbeats missed in a row, %s. It is left out of attestation quorum until it reports again.",
			core.EscapeMarkdown(st.Agent), missed, last)
	} else {
		n.Body = fmt.Sprintf("⚠️ **%s** has missed %d heartbeats in a row: %s.", core.EscapeMarkdown(st.Agent), missed, last)
	}
	return n
}

// recoveryNotice tells the room an agent whose silence was announced
// reported again, where no incident was kept for the silence (one
// announced before incidents were).
func recoveryNotice(room string, st AgentState, hb Heartbeat) core.Notice {
	return core.Notice{
		Key:    fmt.Sprintf("fleet:recovered:%s:%d", st.Agent, st.Incident),
		RoomID: room,
		Kind:   core.NoticeMessage,
		Body:   recoveryText(st, hb),
	}
}

// recoveryText says that an agent is back.
func recoveryText(st AgentState, hb Heartbeat) string {
	var b strings.Builder
	fmt.Fprintf(&b, "✅ **%s** is back: heartbeat for %s after %s of silence.", core.EscapeMarkdown(st.Agent), core.EscapeMarkdown(hb.Cycle), core.HumanDuration(hb.ReceivedAt.Sub(st.LastAt)))
	if st.Announced == announcedOffline {
		b.WriteString(" It counts toward attestation quorum again.")
	}
	return b.String()
}
