package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// raiseSilence raises the incident of an agent's silence with its alert
// n, or folds it into an alert already in the room: that of an agent it
// depends on whose silence is announced (the likelier cause), or that of
// other agents whose silence of the same kind was announced within
// fleet.group_window. A folded or grouped silence has no message of its
// own: raiseSilence returns the incident of the alert that stands for it,
// for the caller to edit (redraw) to name it.
func (f *Service) raiseSilence(ctx context.Context, a AgentConfig, st AgentState, kind string, n core.Notice, now time.Time) (string, error) {
	id := silenceIncident(st.Agent, st.Incident)
	inc, err := f.deps.Incidents.Incident(ctx, id)
	switch {
	case err == nil && inc.Parent != "":
		return inc.Parent, f.deps.Incidents.Join(ctx, id, kind, st.Agent, inc.Parent, n.Body)
	case err == nil:
		// Its own alert goes on (late to offline): the new alert names
		// those folded into it so far.
		members, err := f.deps.Incidents.Members(ctx, id)
		if err != nil {
			return "", err
		}
		n.Body += foldText(members)
		return "", f.deps.Incidents.Raise(ctx, id, kind, st.Agent, n)
	case !errors.Is(err, core.ErrNotFound):
		return "", err
	}
	return f.place(ctx, id, kind, st.Agent, n, now)
}

// raiseNever raises the incident of an agent that has never reported
// with its alert n, folded or grouped as a silence is, and returns the
// incident that stands for it when it was. An agent told about before
// (Jarvis restarted since) is not told again, unless its alert had been
// folded into one that resolved: then it gets its own.
func (f *Service) raiseNever(ctx context.Context, a AgentConfig, n core.Notice, now time.Time) (string, error) {
	id := neverIncident(a.Name)
	inc, err := f.deps.Incidents.Incident(ctx, id)
	switch {
	case errors.Is(err, core.ErrNotFound), err == nil && inc.ResolvedAt.IsZero() && inc.Parent == "" && !inc.Posted() && inc.HeldKey == "":
		return f.place(ctx, id, kindNever, a.Name, n, now)
	case err != nil:
		return "", err
	}
	return "", nil
}

// place raises incident id, of kind about agent, with its alert n, or
// folds it into an alert already in the room: that of an agent it
// depends on that is silent or never reported (the likelier cause), or
// that of other agents' alerts of the same kind raised within
// fleet.group_window. It returns the incident of the alert that stands
// for a folded or grouped one.
func (f *Service) place(ctx context.Context, id, kind, agent string, n core.Notice, now time.Time) (string, error) {
	r := f.roster.Load()
	parent, err := f.downUpstream(ctx, r, agent)
	if err == nil && parent == "" {
		parent, err = f.groupFor(ctx, r, agent, kind, now)
	}
	switch {
	case err != nil:
		return "", err
	case parent == "":
		return "", f.deps.Incidents.Raise(ctx, id, kind, agent, n)
	}
	return parent, f.deps.Incidents.Join(ctx, id, kind, agent, parent, n.Body)
}

// downUpstream returns the open incident, with an alert of its own, of
// the most upstream agent that agent depends on whose silence is
// announced, or that never reported; "" when none is.
func (f *Service) downUpstream(ctx context.Context, r *roster, agent string) (string, error) {
	for _, up := range r.deps.upstream[strings.ToUpper(agent)] {
		st, err := f.deps.Heartbeats.AgentState(ctx, up)
		var id string
		switch {
		case errors.Is(err, core.ErrNotFound):
			id = neverIncident(up)
		case err != nil:
			return "", err
		case st.Announced == "":
			continue
		default:
			id = silenceIncident(st.Agent, st.Incident)
		}
		inc, err := f.deps.Incidents.Incident(ctx, id)
		switch {
		case errors.Is(err, core.ErrNotFound):
			continue
		case err != nil:
			return "", err
		case inc.ResolvedAt.IsZero() && inc.Parent == "":
			return inc.ID, nil
		}
	}
	return "", nil
}

// groupFor returns the open incident of another agent's silence of the
// same kind raised within fleet.group_window, made a group if it is not
// one yet; "" when there is none, grouping is off, or either agent is one
// that others depend on (its alert stands alone, for them to fold into).
func (f *Service) groupFor(ctx context.Context, r *roster, agent, kind string, now time.Time) (string, error) {
	if r.group == 0 || r.deps.needed[strings.ToUpper(agent)] {
		return "", nil
	}
	recent, err := f.deps.Incidents.Recent(ctx, kind, now.Add(-r.group))
	if err != nil {
		return "", err
	}
	for _, inc := range recent {
		if strings.HasPrefix(inc.ID, oncall.GroupPrefix) {
			return inc.ID, nil
		}
		if !strings.HasPrefix(inc.ID, silencePrefix) && !strings.HasPrefix(inc.ID, neverPrefix) || strings.EqualFold(inc.Subject, agent) ||
			r.deps.needed[strings.ToUpper(inc.Subject)] {
			continue
		}
		g, err := f.deps.Incidents.Group(ctx, inc.ID)
		return g.ID, err
	}
	return "", nil
}

// redraw edits the alert of incident id (a group, or the silence of an
// agent others depend on) to name its members as they stand.
func (f *Service) redraw(ctx context.Context, id string) error {
	inc, err := f.deps.Incidents.Incident(ctx, id)
	if err != nil || !inc.ResolvedAt.IsZero() {
		return err
	}
	members, err := f.deps.Incidents.Members(ctx, id)
	if err != nil {
		return err
	}
	if strings.HasPrefix(id, oncall.GroupPrefix) {
		return f.deps.Incidents.Edit(ctx, id, groupText(inc.Kind, members))
	}
	own, _, _ := strings.Cut(inc.Body, foldSeparator)
	return f.deps.Incidents.Edit(ctx, id, own+foldText(members))
}

// resolveSilence closes the incident of an agent's silence when it
// reports again. Its own alert is edited to resolved with a reply in its
// thread; the agents folded into it that are still silent are each given
// a cadence to report before their own alert. A member of a group or of
// another agent's alert is marked back there; the group resolves with
// its last member.
func (f *Service) resolveSilence(ctx context.Context, st AgentState, hb Heartbeat) error {
	inc, err := f.deps.Incidents.Incident(ctx, silenceIncident(st.Agent, st.Incident))
	if errors.Is(err, core.ErrNotFound) {
		return f.announce(ctx, recoveryNotice(f.deps.Room, st, hb))
	}
	if err != nil {
		return err
	}
	return f.resolveAlert(ctx, inc, recoveryText(st, hb), hb.ReceivedAt)
}

// resolveNever closes the incident of an agent that had never reported
// as its first heartbeat comes, as resolveSilence does a silence's.
func (f *Service) resolveNever(ctx context.Context, hb Heartbeat) error {
	inc, err := f.deps.Incidents.Incident(ctx, neverIncident(hb.Agent))
	switch {
	case errors.Is(err, core.ErrNotFound):
		return nil
	case err != nil || !inc.ResolvedAt.IsZero():
		return err
	}
	return f.resolveAlert(ctx, inc, fmt.Sprintf("✅ **%s** reported for the first time: heartbeat for %s.",
		core.EscapeMarkdown(hb.Agent), core.EscapeMarkdown(hb.Cycle)), hb.ReceivedAt)
}

// resolveAlert closes inc, an agent's silence or its never having
// reported, saying said, as its agent reports at at.
func (f *Service) resolveAlert(ctx context.Context, inc oncall.Incident, said string, at time.Time) error {
	id := inc.ID
	if inc.Parent == "" {
		members, err := f.deps.Incidents.Members(ctx, id)
		if err != nil {
			return err
		}
		var silent, never []string
		for _, m := range members {
			switch {
			case !m.ResolvedAt.IsZero():
			case m.Kind == kindNever:
				// It has no state to give a grace to: it leaves the
				// alert, and the next sweep gives it one of its own.
				if err := f.deps.Incidents.Join(ctx, m.ID, m.Kind, m.Subject, "", m.Body); err != nil {
					return err
				}
				never = append(never, m.Subject)
			default:
				silent = append(silent, m.Subject)
			}
		}
		if len(silent) > 0 {
			said += fmt.Sprintf(" Still silent: %s; each has its own alert if it does not report within its cadence.", agentList(silent))
		}
		if len(never) > 0 {
			said += fmt.Sprintf(" Never reported yet: %s; each gets its own alert.", agentList(never))
		}
		if err := f.deps.Incidents.Resolve(ctx, id, said); err != nil {
			return err
		}
		for _, agent := range silent {
			if err := f.regrace(ctx, agent, at); err != nil {
				return err
			}
		}
		for _, agent := range never {
			f.silent.Delete(strings.ToUpper(agent))
		}
		return nil
	}
	if err := f.deps.Incidents.Resolve(ctx, id, said); err != nil {
		return err
	}
	if !strings.HasPrefix(inc.Parent, oncall.GroupPrefix) {
		return f.redraw(ctx, inc.Parent)
	}
	members, err := f.deps.Incidents.Members(ctx, inc.Parent)
	if err != nil {
		return err
	}
	var back []string
	for _, m := range members {
		if m.ResolvedAt.IsZero() {
			return f.redraw(ctx, inc.Parent)
		}
		back = append(back, m.Subject)
	}
	if inc.Kind == kindNever {
		return f.deps.Incidents.Resolve(ctx, inc.Parent, fmt.Sprintf("✅ All %d have reported: %s.", len(back), agentList(back)))
	}
	return f.deps.Incidents.Resolve(ctx, inc.Parent, fmt.Sprintf("✅ All %d are back: %s.", len(back), agentList(back)))
}

// regrace gives an agent whose silence was folded into an alert that
// resolved one cadence from now before it gets an alert of its own.
func (f *Service) regrace(ctx context.Context, agent string, now time.Time) error {
	st, err := f.deps.Heartbeats.AgentState(ctx, agent)
	if err != nil || st.Announced == "" {
		return err
	}
	cadence := DefaultCadence
	if a, ok := f.roster.Load().byKey[strings.ToUpper(agent)]; ok {
		cadence = a.Cadence
	}
	st.Announced, st.GraceUntil = "", now.Add(cadence)
	return f.deps.Heartbeats.PutAgentStates(ctx, st)
}

// silencePrefix starts the ID of every silence incident.
const silencePrefix = "silence:"

// kindNever is the kind of the incident of an agent that has never
// reported, neverPrefix starts its ID, followed by the agent, and
// neverKeyPrefix its alert's key.
const (
	kindNever      = "never"
	neverPrefix    = "never:"
	neverKeyPrefix = "fleet:never:"
)

// neverIncident names the incident of an agent that has never reported.
func neverIncident(agent string) string { return neverPrefix + agent }

// foldSeparator parts an agent's own alert from the line naming the
// agents folded into it.
const foldSeparator = "\n\n"

// foldText is the line under an agent's alert naming the agents that
// depend on it and fell silent too; "" when none did.
func foldText(members []oncall.Incident) string {
	var silent, back []string
	for _, m := range members {
		if m.ResolvedAt.IsZero() {
			silent = append(silent, m.Subject)
		} else {
			back = append(back, m.Subject)
		}
	}
	var b strings.Builder
	if len(silent) > 0 {
		verb := "are"
		if len(silent) == 1 {
			verb = "is"
		}
		fmt.Fprintf(&b, "%s that depend on it %s also silent: %s.", counted(len(silent)), verb, agentList(silent))
	}
	if len(back) > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "Back already: %s.", agentList(back))
	}
	if b.Len() == 0 {
		return ""
	}
	return foldSeparator + b.String()
}

// groupText is the alert of a group of silences of one kind: each agent,
// in alphabetical order, marked when it went offline since or is back.
func groupText(kind string, members []oncall.Incident) string {
	members = slices.SortedFunc(slices.Values(members), func(a, b oncall.Incident) int { return strings.Compare(a.Subject, b.Subject) })
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = "**" + core.EscapeMarkdown(m.Subject) + "**"
		switch {
		case !m.ResolvedAt.IsZero() && kind == kindNever:
			names[i] += " (reported)"
		case !m.ResolvedAt.IsZero():
			names[i] += " (back)"
		case m.Kind == announcedOffline && kind != announcedOffline:
			names[i] += " (offline)"
		}
	}
	switch kind {
	case kindNever:
		return fmt.Sprintf("⚠️ %s have never reported: %s. Are they running, with their tokens?", counted(len(members)), strings.Join(names, ", "))
	case announcedOffline:
		return fmt.Sprintf("🔴 %s are offline: %s. They are left out of attestation quorum until they report again.",
			counted(len(members)), strings.Join(names, ", "))
	}
	return fmt.Sprintf("⚠️ %s have missed %d heartbeats in a row: %s.", counted(len(members)), AlertMisses, strings.Join(names, ", "))
}

// agentList names agents in bold, escaped, in alphabetical order,
// separated by commas.
func agentList(agents []string) string {
	names := make([]string, len(agents))
	for i, a := range slices.Sorted(slices.Values(agents)) {
		names[i] = "**" + core.EscapeMarkdown(a) + "**"
	}
	return strings.Join(names, ", ")
}

// counted is "1 agent" or "n agents".
func counted(n int) string {
	if n == 1 {
		return "1 agent"
	}
	return fmt.Sprintf("%d agents", n)
}
