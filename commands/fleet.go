package commands

import (
	"context"
	"regexp"
	"strings"

	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// FleetReader is what `!fleet` reads: heartbeat records only, never a
// question to an agent.
type FleetReader interface {
	FleetStatus(ctx context.Context) ([]fleet.AgentReport, error)
	Agents() []fleet.AgentConfig
}

// cmdFleet is `!fleet [agent]`; fleetQuestion turns the questions people
// ask in their own words ("what's the fleet doing", "is EVE ok?") into it.
var cmdFleet = &Handler{
	Name:    "fleet",
	Aliases: []string{"agents"},
	Args:    "[agent]",
	Help:    "What the fleet is doing, from the agents' heartbeats: one line per agent, then what needs attention.",
	Func:    fleetAnswer,
}

func fleetAnswer(e *Event) {
	rows, err := e.Proc.fleet.FleetStatus(e.Ctx)
	if err != nil {
		e.Fail(err)
		return
	}
	if len(e.Args) == 0 {
		e.Reply("%s", fleet.Render(rows))
		return
	}
	for _, r := range rows {
		if strings.EqualFold(r.Agent, e.Args[0]) {
			e.Reply("%s", fleet.Render([]fleet.AgentReport{r}))
			return
		}
	}
	e.Reply("I know no agent called %q. `%sfleet` lists them.", e.Args[0], e.Proc.Prefix())
}

var (
	fleetNoun  = regexp.MustCompile(`\b(fleet|agents)\b`)
	fleetAsk   = regexp.MustCompile(`^(what|what's|whats|how|how's|hows|is|are|any|status|show|give|tell|who)\b|\?$|\bstatus\b|\bdoing\b`)
	fleetWell  = regexp.MustCompile(`\b(ok|okay|alright|all right|fine|up|alive|online|offline|running|working|healthy|doing|late|down|status)\b`)
	fleetWatch = regexp.MustCompile(`\b(tell me|let me know|alert me|ping me|notify me|warn me|watch|keep an eye)\b`)
)

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
