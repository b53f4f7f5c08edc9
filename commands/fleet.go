package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/history"
)

// FleetReader is what `!fleet` reads: heartbeat records only, never a
// question to an agent.
type FleetReader interface {
	FleetStatus(ctx context.Context) ([]fleet.AgentReport, error)
	Agents() []fleet.AgentConfig
	// RecentSubjects lists the attestation subjects closing after since,
	// newest first, with what their verdicts add up to.
	RecentSubjects(ctx context.Context, since time.Time, limit int) ([]fleet.AttestationSubject, []fleet.Decision, error)
}

// Attestations `!fleet` lists: those of the last day, the newest few.
const (
	fleetAttestationSpan  = 24 * time.Hour
	fleetAttestationLimit = 5
)

// fleetCommands are `!fleet [agent]`, read from what reader says; intent
// turns the questions people ask in their own words ("what's the fleet
// doing", "is EVE ok?") into it.
type fleetCommands struct {
	reader FleetReader
}

// handlers are `!fleet`.
func (c *fleetCommands) handlers() []*Handler {
	return []*Handler{{
		Name:    "fleet",
		Aliases: []string{"agents"},
		Args:    "[agent]",
		Help:    "What the fleet is doing, from the agents' heartbeats: one line per agent, then what needs attention.",
		Func:    c.answer,
		Subcommands: []*Handler{
			{Name: "chart", Args: "[agent]", Help: "A chart of each agent's MII over the last day, the times it was offline shaded.", Func: c.chart},
		},
	}}
}

func (c *fleetCommands) answer(e *Event) error {
	rows, err := c.reader.FleetStatus(e.Ctx)
	if err != nil {
		return err
	}
	if len(e.Args) == 0 {
		subjects, decisions, err := c.reader.RecentSubjects(e.Ctx, e.Proc.deps.Clock.Now().Add(-fleetAttestationSpan), fleetAttestationLimit)
		if err != nil {
			return err
		}
		e.Reply("%s", fleet.Render(rows)+fleetAttestations(subjects, decisions))
		return nil
	}
	for _, r := range rows {
		if strings.EqualFold(r.Agent, e.Args[0]) {
			e.Reply("%s", fleet.Render([]fleet.AgentReport{r}))
			return nil
		}
	}
	e.Reply("I know no agent called %q. `%sfleet` lists them.", e.Args[0], e.Proc.Prefix())
	return nil
}

// fleetAttestations lists the subjects' stored outcomes, each with the
// verdicts behind it: "`seal-C-284-001` Release 284: passed — 3 of 3
// verdicts in (pass 3), quorum 2"; empty when there are none.
func fleetAttestations(subjects []fleet.AttestationSubject, decisions []fleet.Decision) string {
	if len(subjects) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n**Attestations** (the last day)")
	for i, s := range subjects {
		fmt.Fprintf(&b, "\n- %s", core.CodeSpan(s.ID))
		if s.Title != "" {
			fmt.Fprintf(&b, " %s", core.EscapeMarkdown(s.Title))
		}
		fmt.Fprintf(&b, ": **%s** — %s", s.Outcome, fleet.DecisionText(decisions[i]))
		if s.FinalAt.IsZero() {
			fmt.Fprintf(&b, "; closes %s", core.TimeText(s.ClosesAt))
		}
	}
	return b.String()
}

// chart is `!fleet chart [agent]`: an image notice asking for every
// configured agent's MII (or one agent's) over the last history.ChartSpan,
// its offline spans shaded.
func (c *fleetCommands) chart(e *Event) error {
	agents := c.reader.Agents()
	if len(e.Args) > 1 {
		e.Reply("Which agent? `%sfleet chart [agent]`", e.Proc.Prefix())
		return nil
	}
	if len(e.Args) == 1 {
		i := slices.IndexFunc(agents, func(a fleet.AgentConfig) bool { return strings.EqualFold(a.Name, e.Args[0]) })
		if i < 0 {
			e.Reply("I know no agent called %q. `%sfleet` lists them.", e.Args[0], e.Proc.Prefix())
			return nil
		}
		agents = agents[i : i+1]
	}
	if len(agents) == 0 {
		e.Reply("No agents are configured, so there is nothing to chart.")
		return nil
	}
	now := e.Proc.deps.Clock.Now()
	req := history.Chart{Title: "MII per agent", Source: core.SourceRef{Kind: fleet.SourceAgentMII}, Unit: "ratio",
		From: now.Add(-history.ChartSpan), To: now, Watched: []string{string(fleet.PresenceOffline)}}
	for _, a := range agents {
		req.Series = append(req.Series, history.Series{Name: a.Name,
			Values: core.SourceRef{Kind: fleet.SourceAgentMII, Param: a.Name}, Shade: core.SourceRef{Kind: fleet.SourceAgentStatus, Param: a.Name}})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeImage, Body: string(body), TargetEvent: e.EventID})
	return nil
}

var (
	fleetNoun  = regexp.MustCompile(`\b(fleet|agents)\b`)
	fleetAsk   = regexp.MustCompile(`^(what|what's|whats|how|how's|hows|is|are|any|status|show|give|tell|who)\b|\?$|\bstatus\b|\bdoing\b`)
	fleetWell  = regexp.MustCompile(`\b(ok|okay|alright|all right|fine|up|alive|online|offline|running|working|healthy|doing|late|down|status)\b`)
	fleetWatch = regexp.MustCompile(`\b(tell me|let me know|alert me|ping me|notify me|warn me|watch|keep an eye)\b`)
)

// intent turns a question about the fleet into `!fleet [agent]`.
func (c *fleetCommands) intent(text string) (string, []string, bool) {
	return fleetQuestion(text, c.reader.Agents())
}

// fleetQuestion recognises a question about the fleet or one agent and
// turns it into `!fleet [agent]`. Requests to be told later ("tell me if
// EVE goes offline") are tripwires, not questions, and are left alone.
func fleetQuestion(text string, agents []fleet.AgentConfig) (string, []string, bool) {
	t := strings.ToLower(strings.TrimSpace(text))
	if fleetWatch.MatchString(t) || !fleetAsk.MatchString(t) {
		return "", nil, false
	}
	for _, a := range agents {
		name := regexp.MustCompile(`\b` + regexp.QuoteMeta(strings.ToLower(a.Name)) + `\b`)
		if name.MatchString(t) && fleetWell.MatchString(t) {
			return "fleet", []string{a.Name}, true
		}
	}
	if fleetNoun.MatchString(t) {
		return "fleet", nil, true
	}
	return "", nil, false
}
