package commands

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// Limits of `!breaker events`, and how much of a reason a list line shows.
const (
	defaultBreakerEvents = 10
	maxBreakerEvents     = 25
	breakerReasonInList  = 120
)

// The reactions people answer a halt notice with. ⏹ keeps the agent
// halted; closing the breaker at once is `!breaker reset` (or the reply
// "reset"), for admins.
const (
	breakerReview = "👀"
	breakerResume = "▶️"
	breakerKeep   = "⏹️"
)

// breakerAnswers maps a reaction on a halt notice, or a reply to it, to
// what it asks for. Keys carry no variation selector (see breakerAnswer).
var breakerAnswers = map[string]breaker.Action{
	"👀": breaker.ActReview, "review": breaker.ActReview, "reviewing": breaker.ActReview, oncall.ClaimWord: breaker.ActReview,
	"▶": breaker.ActResume, "resume": breaker.ActResume,
	"⏹": breaker.ActKeep, "keep": breaker.ActKeep, "keep halted": breaker.ActKeep, "keep it halted": breaker.ActKeep,
	"reset": breaker.ActOverrule,
}

// breakerVerb names each action a person can take, as replies say it.
var breakerVerb = map[breaker.Action]string{
	breaker.ActReview:   "review",
	breaker.ActResume:   "resume",
	breaker.ActKeep:     "keep halted",
	breaker.ActOverrule: "reset",
}

// breakerAnswer reads a reaction or reply. The variation selector is
// ignored, since clients differ in sending it.
func breakerAnswer(answer string) (breaker.Action, bool) {
	word := strings.ReplaceAll(answer, "\ufe0f", "")
	word = strings.ToLower(strings.Trim(strings.TrimSpace(word), ".!"))
	act, ok := breakerAnswers[word]
	return act, ok
}

// breakerCommands are the `!breaker` verbs; onAnswer takes the answers
// (reactions and replies) to halt notices.
type breakerCommands struct {
	svc *breaker.Service
	// claims take 💤 or a reply `snooze 4h` on a halt, when halts are
	// incidents.
	claims *oncallCommands
}

// handlers are `!breaker`.
func (c *breakerCommands) handlers() []*Handler {
	return []*Handler{{
		Name: "breaker",
		Help: "The agents' circuit breakers: see them, review a halt, resume or reset it.",
		Subcommands: []*Handler{
			{Name: "status", Args: "[agent]", Help: "Where every agent's breaker stands, or one agent's in full.",
				Func: c.status},
			{Name: "events", Args: "[agent] [N]", Help: fmt.Sprintf("The latest N halts (default %d, at most %d), of one agent or of all.", defaultBreakerEvents, maxBreakerEvents),
				Func: c.events},
			{Name: "review", Args: "<event>", Help: "Show a halt in full, with evidence and history, and say you are reviewing it.",
				Func: c.act(breaker.ActReview)},
			{Name: "keep", Args: "<event>", Help: "Say the agent stays halted; the breaker stays open.",
				Func: c.act(breaker.ActKeep)},
			{Name: "resume", Args: "<event>", Help: "Resume a halted agent into a half-open trial that the supervisor verifies. Admins only.",
				Admin: true, Func: c.act(breaker.ActResume)},
			{Name: "reset", Args: "<event>", Help: "Overrule: close the breaker at once, without verification, under your name. Admins only.",
				Admin: true, Func: c.act(breaker.ActOverrule)},
		},
	}}
}

// status answers `!breaker status [agent]`.
func (c *breakerCommands) status(e *Event) error {
	b := c.svc
	prefix := e.Proc.Prefix()
	if len(e.Args) > 1 {
		e.Reply("One agent at a time: `%sbreaker status [agent]`.", prefix)
		return nil
	}
	if len(e.Args) == 1 {
		return breakerStatusOf(e, b, strings.Trim(e.Args[0], "`"))
	}
	all, err := b.StatusAll(e.Ctx)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		e.Reply("No agent has been halted: every circuit breaker is closed. When the supervisor halts one, a notice comes to this room.")
		return nil
	}
	// Halted agents first, then those on trial, then the rest by name.
	rank := map[breaker.State]int{breaker.Open: 0, breaker.HalfOpen: 1, breaker.Closed: 2}
	slices.SortStableFunc(all, func(x, y breaker.Status) int { return cmp.Compare(rank[x.State], rank[y.State]) })
	var sb strings.Builder
	sb.WriteString("**Circuit breakers**\n\n")
	for _, st := range all {
		fmt.Fprintf(&sb, "- %s\n", breakerLine(st))
	}
	fmt.Fprintf(&sb, "\n`%sbreaker status <agent>` shows one in full, `%sbreaker events <agent>` its halts.", prefix, prefix)
	e.Reply("%s", sb.String())
	return nil
}

// breakerLine is one agent's breaker in a list.
func breakerLine(st breaker.Status) string {
	agent := core.EscapeMarkdown(st.Agent)
	switch {
	case st.State == breaker.Open && st.Event != nil:
		return fmt.Sprintf("🛑 **%s** halted since %s, event `%s` (%s): %s",
			agent, breakerTime(st.Since), st.Event.ID, st.Event.Severity, breakerShort(st.Event.Reason))
	case st.State == breaker.HalfOpen && st.Event != nil:
		return fmt.Sprintf("🟡 **%s** on a half-open trial since %s, event `%s`: waiting for the supervisor's verification",
			agent, breakerTime(st.Since), st.Event.ID)
	default:
		return fmt.Sprintf("✅ **%s** runs, closed since %s", agent, breakerTime(st.Since))
	}
}

// breakerStatusOf answers `!breaker status <agent>`.
func breakerStatusOf(e *Event, b *breaker.Service, agent string) error {
	prefix := e.Proc.Prefix()
	st, err := b.Status(e.Ctx, agent)
	if breakerBadInput(e, err) {
		return nil
	}
	if err != nil {
		return err
	}
	name := core.EscapeMarkdown(st.Agent)
	ev := st.Event
	switch {
	case st.State == breaker.Open && ev != nil:
		review := "nobody yet"
		if ev.ReviewedBy != "" {
			review = fmt.Sprintf("%s since %s", core.EscapeMarkdown(ev.ReviewedBy), breakerTime(ev.ReviewedAt))
		}
		e.Reply("🛑 **%s** is halted: its circuit breaker is open since %s.\n\n"+
			"- Event: `%s`, %s, opened by %s\n- Reason: %s\n- Evidence: %s\n- Reviewing: %s\n\n"+
			"Next: `%sbreaker review %s` shows the evidence and takes the review. "+
			"An admin resumes it with `%sbreaker resume %s` (a half-open trial the supervisor verifies) "+
			"or closes the breaker at once with `%sbreaker reset %s`.",
			name, breakerTime(st.Since), ev.ID, ev.Severity, core.EscapeMarkdown(ev.OpenedBy), core.EscapeMarkdown(ev.Reason),
			breakerCount(len(ev.Evidence), "item"), review, prefix, ev.ID, prefix, ev.ID, prefix, ev.ID)
	case st.State == breaker.HalfOpen && ev != nil:
		e.Reply("🟡 **%s** is on a half-open trial since %s, after the halt `%s` (%s): %s\n\n"+
			"Next: wait for the supervisor's verification; it closes the breaker or opens it again. "+
			"An admin can close it at once with `%sbreaker reset %s`.",
			name, breakerTime(st.Since), ev.ID, ev.Severity, breakerShort(ev.Reason), prefix, ev.ID)
	default:
		last, err := b.Events(e.Ctx, st.Agent, 1)
		if err != nil {
			return err
		}
		if len(last) == 0 {
			e.Reply("✅ **%s** runs: its circuit breaker is closed, and it has never been halted. `%sbreaker status` shows every breaker.", name, prefix)
			return nil
		}
		e.Reply("✅ **%s** runs: its circuit breaker is closed since %s. Last halt: `%s` on %s, %s.\n\n`%sbreaker events %s` lists its halts.",
			name, breakerTime(st.Since), last[0].ID, breakerTime(last[0].At), breakerOutcome(last[0], st), prefix, st.Agent)
	}
	return nil
}

// events answers `!breaker events [agent] [N]`.
func (c *breakerCommands) events(e *Event) error {
	b := c.svc
	prefix := e.Proc.Prefix()
	agent, n := "", defaultBreakerEvents
	for _, arg := range e.Args {
		if v, err := strconv.Atoi(arg); err == nil {
			if v < 1 || v > maxBreakerEvents {
				e.Reply("N must be between 1 and %d.", maxBreakerEvents)
				return nil
			}
			n = v
			continue
		}
		if agent != "" {
			e.Reply("One agent at a time: `%sbreaker events [agent] [N]`.", prefix)
			return nil
		}
		agent = strings.Trim(arg, "`")
	}
	var statuses []breaker.Status
	if agent != "" {
		st, err := b.Status(e.Ctx, agent)
		if breakerBadInput(e, err) {
			return nil
		}
		if err != nil {
			return err
		}
		statuses = []breaker.Status{st}
	} else {
		var err error
		if statuses, err = b.StatusAll(e.Ctx); err != nil {
			return err
		}
	}
	current := map[string]breaker.Status{}
	var evs []breaker.Event
	for _, st := range statuses {
		current[st.Agent] = st
		more, err := b.Events(e.Ctx, st.Agent, n)
		if err != nil {
			return err
		}
		evs = append(evs, more...)
	}
	slices.SortStableFunc(evs, func(x, y breaker.Event) int { return y.At.Compare(x.At) })
	evs = evs[:min(n, len(evs))]
	switch {
	case len(evs) == 0 && agent != "":
		e.Reply("**%s** has never been halted. `%sbreaker status` shows every breaker.", core.EscapeMarkdown(agent), prefix)
		return nil
	case len(evs) == 0:
		e.Reply("No agent has been halted yet. When the supervisor halts one, a notice comes to this room.")
		return nil
	}
	var sb strings.Builder
	if agent != "" {
		fmt.Fprintf(&sb, "**Halts of %s**, newest first\n\n", core.EscapeMarkdown(agent))
	} else {
		sb.WriteString("**Latest halts**, newest first\n\n")
	}
	for _, ev := range evs {
		fmt.Fprintf(&sb, "- `%s` %s, **%s**, %s: %s. %s\n", ev.ID, breakerTime(ev.At), core.EscapeMarkdown(ev.Agent), ev.Severity,
			breakerShort(ev.Reason), core.UpperFirst(breakerOutcome(ev, current[ev.Agent])))
	}
	fmt.Fprintf(&sb, "\n`%sbreaker review <event>` shows one in full, with its history.", prefix)
	e.Reply("%s", sb.String())
	return nil
}

// act answers `!breaker review|keep|resume|reset <event>`.
func (c *breakerCommands) act(act breaker.Action) func(*Event) error {
	return func(e *Event) error { return c.actOn(e, act) }
}

func (c *breakerCommands) actOn(e *Event, act breaker.Action) error {
	b := c.svc
	prefix := e.Proc.Prefix()
	ev, ok, err := breakerTarget(e, b, act)
	if !ok || err != nil {
		return err
	}
	_, err = breakerDo(e, b, act, ev)
	name := core.EscapeMarkdown(ev.Agent)
	if errors.Is(err, core.ErrIllegalTransition) || act == breaker.ActReview && errors.Is(err, core.ErrForbidden) {
		why := reasonOf(err)
		if errors.Is(err, core.ErrIllegalTransition) {
			if why, err = breakerNotNow(e, b, ev, act); err != nil {
				return err
			}
		}
		if act != breaker.ActReview {
			e.Reply("%s", why)
			return nil
		}
		// A halt that is over, or someone else reviews, can still be read.
		detail, err := breakerDetail(e, b, ev.ID)
		if err != nil {
			return err
		}
		e.Reply("%s\n\n%s", why, detail)
		return nil
	}
	if err != nil {
		return err
	}
	switch act {
	case breaker.ActReview:
		detail, err := breakerDetail(e, b, ev.ID)
		if err != nil {
			return err
		}
		e.Reply("👀 You are reviewing the halt of **%s**.\n\n%s\n\n"+
			"Next: an admin resumes it with %s on the halt notice or `%sbreaker resume %s` (a half-open trial the supervisor verifies), "+
			"or closes the breaker at once with `%sbreaker reset %s`. %s or `%sbreaker keep %s` says it stays halted.",
			name, detail, breakerResume, prefix, ev.ID, prefix, ev.ID, breakerKeep, prefix, ev.ID)
	case breaker.ActKeep:
		e.Reply("⏹️ Noted: **%s** stays halted, and the audit trail says you decided so. "+
			"An admin resumes it with `%sbreaker resume %s` when it is safe, or closes the breaker with `%sbreaker reset %s`.",
			name, prefix, ev.ID, prefix, ev.ID)
	case breaker.ActResume:
		e.Reply("▶️ Resumed **%s** into a half-open trial (event `%s`). The supervisor's verification closes the breaker or opens it again; "+
			"`%sbreaker reset %s` closes it at once.", name, ev.ID, prefix, ev.ID)
	case breaker.ActOverrule:
		e.Reply("Overruled: the breaker of **%s** is closed without verification and the agent runs again. "+
			"The audit trail names you; `%sbreaker events %s` shows it.", name, prefix, ev.Agent)
	}
	return nil
}

// onAnswer takes the answers to halt notices: the breaker's own (act),
// and, when halts are incidents (claims set), 💤 or a reply `snooze 4h`,
// which snooze the halt like any alert, by anyone who may talk to Jarvis
// in the room.
func (c *breakerCommands) onAnswer(e *Event, key, answer string) error {
	length, snooze := oncall.SnoozeOf(answer)
	if snooze && c.claims != nil {
		eventID, _, _ := strings.Cut(strings.TrimPrefix(key, "breaker:"), ":")
		return c.claims.snooze(e, "breaker:"+eventID, length, answer == oncall.SnoozeReaction)
	}
	return c.onAct(e, key, answer)
}

// onAct acts on a reaction to, or a reply to, one of a halt's
// notices (the halt notice or its thread). Anything but the answers of
// breakerAnswers is ignored. A refusal is threaded under the halt notice
// and mentions the person; a done transition is told there by core.
func (c *breakerCommands) onAct(e *Event, key, answer string) error {
	b := c.svc
	act, ok := breakerAnswer(answer)
	if !ok {
		return nil
	}
	eventID, _, _ := strings.Cut(strings.TrimPrefix(key, "breaker:"), ":")
	ev, err := b.EventByNoticeKey(e.Ctx, "breaker:"+eventID)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	say := func(text string) {
		e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeMessage, Target: ev.NoticeKey(), Thread: true,
			Mentions: []string{e.Sender}, Body: text})
	}
	if (act == breaker.ActReview || act == breaker.ActKeep) && !e.Trust.AtLeast(core.TrustLinked) {
		// Reviewing claims the halt's alert: claims are taken from
		// accounts someone vouches for.
		say(fmt.Sprintf("Reviewing a halt claims it, and claims are taken from a Matrix account or a bridged account linked to one (`%slink`); nothing changed.",
			e.Proc.Prefix()))
		return nil
	}
	if (act == breaker.ActResume || act == breaker.ActOverrule) && !e.Admin() {
		doing := map[breaker.Action]string{breaker.ActResume: "resuming", breaker.ActOverrule: "resetting"}[act]
		admins := make([]string, len(e.Proc.cfg.Admins))
		for i, a := range e.Proc.cfg.Admins {
			admins[i] = core.EscapeMarkdown(a)
		}
		ask := "an admin"
		if len(admins) > 0 {
			ask = fmt.Sprintf("an admin (%s)", strings.Join(admins, ", "))
		}
		say(fmt.Sprintf("Sorry, %s a breaker is for admins, so **%s** stays halted and nothing changed. React %s to say you are reviewing it, or ask %s to %s it.",
			doing, core.EscapeMarkdown(ev.Agent), breakerReview, ask, breakerVerb[act]))
		return nil
	}
	_, err = breakerDo(e, b, act, ev)
	if errors.Is(err, core.ErrIllegalTransition) {
		why, err := breakerNotNow(e, b, ev, act)
		if err != nil {
			return err
		}
		say(why)
		return nil
	}
	if why, ok := refusal(err); ok {
		// Someone else claimed the halt.
		say(why)
		return nil
	}
	return err
}

// breakerDo applies a person's action to the event.
func breakerDo(e *Event, b *breaker.Service, act breaker.Action, ev breaker.Event) (breaker.Status, error) {
	switch act {
	case breaker.ActReview:
		return b.Review(e.Ctx, ev.ID, e.Sender)
	case breaker.ActKeep:
		return b.Keep(e.Ctx, ev.ID, e.Sender)
	case breaker.ActResume:
		return b.Resume(e.Ctx, ev.ID, e.Sender)
	case breaker.ActOverrule:
		return b.Reset(e.Ctx, ev.ID, e.Sender)
	}
	return breaker.Status{}, fmt.Errorf("breaker action %q is not a person's", act)
}

// breakerTarget reads the one argument of a verb: an event ID, or an
// agent's name standing for the event that holds its breaker now. When
// there is none, it answers why and ok is false.
func breakerTarget(e *Event, b *breaker.Service, act breaker.Action) (breaker.Event, bool, error) {
	prefix := e.Proc.Prefix()
	verb := map[breaker.Action]string{breaker.ActReview: "review", breaker.ActKeep: "keep",
		breaker.ActResume: "resume", breaker.ActOverrule: "reset"}[act]
	if len(e.Args) != 1 {
		e.Reply("Which halt? `%sbreaker %s <event>`; `%sbreaker status` shows the agents halted now, with their event IDs.", prefix, verb, prefix)
		return breaker.Event{}, false, nil
	}
	arg := strings.Trim(e.Args[0], "`")
	ev, err := b.Event(e.Ctx, arg)
	if err == nil {
		return ev, true, nil
	}
	if !errors.Is(err, core.ErrNotFound) {
		return ev, false, err
	}
	if breaker.CheckAgent(arg) == nil {
		st, err := b.Status(e.Ctx, arg)
		if err != nil {
			return ev, false, err
		}
		if st.Event != nil {
			return *st.Event, true, nil
		}
	}
	e.Reply("There is no halt %s: it is neither an event ID nor an agent halted now. `%sbreaker status` shows the agents halted now, with their event IDs.",
		core.EscapeMarkdown(arg), prefix)
	return ev, false, nil
}

// breakerNotNow says why act cannot be done on ev now, and what to do
// instead.
func breakerNotNow(e *Event, b *breaker.Service, ev breaker.Event, act breaker.Action) (string, error) {
	prefix := e.Proc.Prefix()
	ev, err := b.Event(e.Ctx, ev.ID)
	if err != nil {
		return "", err
	}
	st, err := b.Status(e.Ctx, ev.Agent)
	if err != nil {
		return "", err
	}
	name, verb := core.EscapeMarkdown(ev.Agent), breakerVerb[act]
	switch ev.Resolution {
	case breaker.Superseded:
		return fmt.Sprintf("Event `%s` is over: its trial failed and the halt of **%s** continues as event `%s`. Act on that one; `%sbreaker status %s` shows it.",
			ev.ID, name, ev.NextID, prefix, ev.Agent), nil
	case breaker.Verified, breaker.Overruled:
		return fmt.Sprintf("Event `%s` is over: %s, so there is nothing to %s. `%sbreaker status %s` shows where **%s** stands.",
			ev.ID, breakerOutcome(ev, st), verb, prefix, ev.Agent, name), nil
	}
	if st.State == breaker.HalfOpen && st.EventID == ev.ID {
		if act == breaker.ActResume {
			return fmt.Sprintf("**%s** is already on a half-open trial (event `%s`): the supervisor's verification closes the breaker or opens it again. "+
				"An admin can close it at once with `%sbreaker reset %s`.", name, ev.ID, prefix, ev.ID), nil
		}
		return fmt.Sprintf("**%s** is on a half-open trial (event `%s`), so there is nothing to %s now: the supervisor's verification closes the breaker or opens it again. "+
			"An admin can close it at once with `%sbreaker reset %s`.", name, ev.ID, verb, prefix, ev.ID), nil
	}
	return fmt.Sprintf("The breaker of **%s** is %s, so I cannot %s event `%s` now. `%sbreaker status %s` shows where it stands.",
		name, st.State, verb, ev.ID, prefix, ev.Agent), nil
}

// breakerDetail is an event in full: reason, evidence and history.
func breakerDetail(e *Event, b *breaker.Service, eventID string) (string, error) {
	ev, err := b.Event(e.Ctx, eventID)
	if err != nil {
		return "", err
	}
	st, err := b.Status(e.Ctx, ev.Agent)
	if err != nil {
		return "", err
	}
	history, err := b.History(e.Ctx, ev.ID)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "**Event `%s`** of **%s**: %s, opened %s by %s\n\n", ev.ID, core.EscapeMarkdown(ev.Agent), ev.Severity, breakerTime(ev.At), core.EscapeMarkdown(ev.OpenedBy))
	fmt.Fprintf(&sb, "- Reason: %s\n", core.EscapeMarkdown(ev.Reason))
	if ev.PreviousID != "" {
		fmt.Fprintf(&sb, "- Follows: event `%s`, whose trial failed\n", ev.PreviousID)
	}
	fmt.Fprintf(&sb, "- State: %s\n", breakerOutcome(ev, st))
	if len(ev.Evidence) == 0 {
		sb.WriteString("\n**Evidence:** none given\n")
	} else {
		lines := make([]string, len(ev.Evidence))
		for i, item := range ev.Evidence {
			lines[i] = fmt.Sprintf("[%d] %s", i+1, item)
		}
		fmt.Fprintf(&sb, "\n**Evidence:**\n\n%s", core.CodeBlock(strings.Join(lines, "\n")))
	}
	sb.WriteString("\n**History:**\n\n")
	for _, t := range history {
		fmt.Fprintf(&sb, "- %s: %s\n", breakerTime(t.At), breakerHistoryLine(t))
	}
	return strings.TrimSpace(sb.String()), nil
}

// breakerHistoryLine tells one audit row.
func breakerHistoryLine(t breaker.Transition) string {
	who := core.EscapeMarkdown(t.Actor)
	switch t.Action {
	case breaker.ActOpen:
		if t.From == breaker.HalfOpen {
			return fmt.Sprintf("halted again by %s during the trial", who)
		}
		return fmt.Sprintf("halted by %s", who)
	case breaker.ActReview:
		return fmt.Sprintf("%s took the review", who)
	case breaker.ActKeep:
		return fmt.Sprintf("%s kept it halted", who)
	case breaker.ActResume:
		return fmt.Sprintf("%s resumed it into a half-open trial", who)
	case breaker.ActVerified:
		return breakerWithWhy(fmt.Sprintf("%s verified it and closed the breaker", who), t.Why)
	case breaker.ActVerifyFailed:
		return breakerWithWhy(fmt.Sprintf("%s's verification failed, halted again", who), t.Why)
	case breaker.ActTimeout:
		return breakerWithWhy("halted again", t.Why)
	case breaker.ActOverrule:
		return fmt.Sprintf("%s overruled it and closed the breaker", who)
	}
	return breakerWithWhy(fmt.Sprintf("%s by %s (%s to %s)", t.Action, who, t.From, t.To), t.Why)
}

func breakerWithWhy(s, why string) string {
	if why == "" {
		return s
	}
	return s + ": " + core.EscapeMarkdown(why)
}

// breakerOutcome says where an event stands: how it ended, or the state
// of the breaker it holds (st is its agent's breaker now).
func breakerOutcome(ev breaker.Event, st breaker.Status) string {
	switch ev.Resolution {
	case breaker.Verified:
		return fmt.Sprintf("verified by %s on %s, the breaker closed", core.EscapeMarkdown(ev.ResolvedBy), breakerTime(ev.ResolvedAt))
	case breaker.Overruled:
		return fmt.Sprintf("overruled by %s on %s, the breaker closed", core.EscapeMarkdown(ev.ResolvedBy), breakerTime(ev.ResolvedAt))
	case breaker.Superseded:
		return fmt.Sprintf("its trial failed on %s and the halt continued as `%s`", breakerTime(ev.ResolvedAt), ev.NextID)
	}
	switch {
	case st.EventID == ev.ID && st.State == breaker.Open:
		return "open, the agent is halted"
	case st.EventID == ev.ID && st.State == breaker.HalfOpen:
		return "on a half-open trial, waiting for the supervisor's verification"
	}
	return "unresolved"
}

// breakerBadInput answers an invalid agent name; it reports whether it did.
func breakerBadInput(e *Event, err error) bool {
	var fe *core.FieldError
	if !errors.As(err, &fe) {
		return false
	}
	e.Reply("That is not an agent name: it %s. `%sbreaker status` lists every agent that has a breaker.", core.EscapeMarkdown(fe.Reason), e.Proc.Prefix())
	return true
}

// breakerTime shows a time in replies, as the halt notices do.
func breakerTime(t time.Time) string { return core.TimeText(t) }

func breakerCount(n int, noun string) string {
	if n == 0 {
		return "none given"
	}
	return core.Plural(n, noun, noun+"s")
}

// breakerShort is text from agents shortened for a list line, safe in
// Markdown.
func breakerShort(s string) string {
	return core.EscapeMarkdown(core.Truncate(strings.Join(strings.Fields(s), " "), breakerReasonInList))
}
