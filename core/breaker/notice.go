package breaker

import (
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// noticeBody is the full text of an event's halt notice as it
// stands now: a headline for where the event is, its details, the status
// line, what to do next and, while it is unresolved, the admins. The halt
// notice carries it first, and every edit carries it again.
func noticeBody(ev Event, rec Record, admins []string, timeout time.Duration, status string) string {
	agent := core.EscapeMarkdown(ev.Agent)
	var b strings.Builder
	switch {
	case ev.Resolution == Verified:
		fmt.Fprintf(&b, "✅ **RESOLVED**: the circuit breaker of **%s** is closed again after verification", agent)
	case ev.Resolution == Overruled:
		fmt.Fprintf(&b, "⏹️ **OVERRULED**: the circuit breaker of **%s** was closed by a person", agent)
	case ev.Resolution == Superseded:
		fmt.Fprintf(&b, "🔁 **RE-OPENED**: the halt of **%s** continues as event `%s`", agent, ev.NextID)
	case rec.State == HalfOpen:
		fmt.Fprintf(&b, "🟡 **HALF-OPEN**: **%s** is on a trial run after a halt", agent)
	default:
		fmt.Fprintf(&b, "🛑 **HALTED**: circuit breaker open for agent **%s**", agent)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "- **Severity:** %s\n", ev.Severity)
	fmt.Fprintf(&b, "- **Reason:** %s\n", core.EscapeMarkdown(ev.Reason))
	fmt.Fprintf(&b, "- **Event:** `%s`, opened %s by %s\n", ev.ID, stamp(ev.At), core.EscapeMarkdown(ev.OpenedBy))
	if ev.PreviousID != "" {
		fmt.Fprintf(&b, "- **Follows:** event `%s`, whose trial failed\n", ev.PreviousID)
	}
	fmt.Fprintf(&b, "- **Status:** %s\n", status)
	b.WriteString("\n")
	if len(ev.Evidence) == 0 {
		b.WriteString("**Evidence:** none given\n")
	} else {
		b.WriteString("**Evidence:**\n\n")
		lines := make([]string, len(ev.Evidence))
		for i, e := range ev.Evidence {
			lines[i] = fmt.Sprintf("[%d] %s", i+1, e)
		}
		b.WriteString(core.CodeBlock(strings.Join(lines, "\n")))
	}
	if ev.Resolution != "" {
		return b.String()
	}
	b.WriteString("\n")
	if rec.State == HalfOpen {
		b.WriteString("**What to do:** wait for the supervisor's verification; it closes the breaker or opens it again.")
		if timeout > 0 {
			fmt.Fprintf(&b, " Without one within %s the breaker opens again.", core.ShortDuration(timeout))
		}
		fmt.Fprintf(&b, " Send `!breaker reset %s` to close it at once.", ev.ID)
	} else {
		fmt.Fprintf(&b, "**What to do:** **%s** stays halted until a person acts. React %s to take the review, "+
			"%s to resume it into a half-open trial that the supervisor verifies, or %s to keep it halted. "+
			"In text: `!breaker review %s`, `!breaker resume %s`, `!breaker keep %s`; `!breaker reset %s` overrules and closes it at once.",
			agent, ReactReview, ReactResume, ReactKeep, ev.ID, ev.ID, ev.ID, ev.ID)
	}
	if len(admins) > 0 {
		fmt.Fprintf(&b, "\n\n%s", strings.Join(admins, " "))
	}
	return b.String()
}

// openLine is the status line of a new halt notice.
func openLine(ev Event) string {
	return fmt.Sprintf("🛑 open since %s; nobody is reviewing yet", stamp(ev.At))
}

// transitionText gives, for a transition of ev's breaker (ev and
// rec as they are afterwards), the new status line of the halt notice and
// the threaded reply that tells what happened. nextID is the event that
// superseded ev, if any.
func transitionText(ev Event, rec Record, act Action, actor, why, nextID string, timeout time.Duration) (status, reply string) {
	agent, who, why := core.EscapeMarkdown(ev.Agent), core.EscapeMarkdown(actor), core.EscapeMarkdown(why)
	switch act {
	case ActReview:
		return fmt.Sprintf("👀 reviewing by %s since %s", who, stamp(ev.ReviewedAt)),
			fmt.Sprintf("👀 %s is reviewing the halt of **%s**.", who, agent)
	case ActResume:
		reply = fmt.Sprintf("▶️ %s resumed **%s** into a half-open trial. The supervisor's verification closes the breaker or opens it again", who, agent)
		if timeout > 0 {
			reply += fmt.Sprintf("; without one by %s it opens again", stamp(rec.Since.Add(timeout)))
		}
		return fmt.Sprintf("🟡 half-open since %s, resumed by %s; waiting for the supervisor's verification", stamp(rec.Since), who),
			reply + "."
	case ActVerified:
		status = fmt.Sprintf("✅ verified and closed by %s at %s", who, stamp(ev.ResolvedAt))
		reply = fmt.Sprintf("✅ %s verified **%s**", who, agent)
		if why != "" {
			status += ": " + why
			reply += ": " + why
		}
		return status, reply + ". The breaker is closed and the agent runs again."
	case ActVerifyFailed:
		return fmt.Sprintf("🔁 re-opened at %s because the verification failed: %s; the halt continues as event `%s`", stamp(ev.ResolvedAt), why, nextID),
			fmt.Sprintf("🛑 %s's verification of **%s** failed: %s. The breaker is open again as event `%s`.", who, agent, why, nextID)
	case ActOpen:
		return fmt.Sprintf("🔁 re-opened at %s because %s halted it again during the trial: %s; the halt continues as event `%s`", stamp(ev.ResolvedAt), who, why, nextID),
			fmt.Sprintf("🛑 %s halted **%s** again during the half-open trial: %s. The breaker is open again as event `%s`.", who, agent, why, nextID)
	case ActTimeout:
		return fmt.Sprintf("🔁 re-opened at %s because it was %s", stamp(rec.Since), why),
			fmt.Sprintf("🛑 **%s** was %s: the breaker is open again. Resume it to try again, or reset it.", agent, why)
	default: // ActOverrule
		return fmt.Sprintf("⏹️ overruled and closed by %s at %s", who, stamp(ev.ResolvedAt)),
			fmt.Sprintf("⏹️ %s overruled the breaker of **%s**: it is closed without verification and the agent runs again.", who, agent)
	}
}

// stamp shows a time in notices.
func stamp(t time.Time) string { return core.TimeText(t) }
