package fleet

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Outcome is what the verdicts on a subject add up to.
type Outcome string

// Outcomes of a subject. Pending and the outcome of its verdicts may still
// change while its window is open; at its close the outcome is final, and
// a subject that never had its quorum is no-quorum.
const (
	OutcomePending  Outcome = "pending"
	OutcomePassed   Outcome = "passed"
	OutcomeFlagged  Outcome = "flagged"
	OutcomeRejected Outcome = "rejected"
	OutcomeVetoed   Outcome = "vetoed"
	OutcomeNoQuorum Outcome = "no-quorum"
)

// AttestationConfig says how the verdicts on a subject combine, as the
// reporting contract has it: an outcome needs a quorum of the agents the
// subject awaits, and the designated agent's reject is a veto.
type AttestationConfig struct {
	// Quorum is the share of the awaited agents whose verdicts an outcome
	// needs, rounded up; in (0, 1].
	Quorum float64
	// VetoAgent is the agent whose reject vetoes a subject whatever the
	// others say (the contract's ZEUS); empty for none.
	VetoAgent string
}

// Validate checks the config.
func (c AttestationConfig) Validate() error {
	switch {
	case math.IsNaN(c.Quorum) || c.Quorum <= 0 || c.Quorum > 1:
		return core.Invalid("fleet.attestations.quorum", "must be above 0 and at most 1 (a share of the agents a subject awaits), not %v", c.Quorum)
	case c.VetoAgent != "" && (len(c.VetoAgent) > 64 || !namePattern.MatchString(c.VetoAgent)):
		return core.Invalid("fleet.attestations.veto_agent", "must be an agent's name, not %q", c.VetoAgent)
	}
	return nil
}

// orDefault is c with a zero quorum made all of the awaited agents.
func (c AttestationConfig) orDefault() AttestationConfig {
	if c.Quorum == 0 {
		c.Quorum = 1
	}
	return c
}

// Decision is a subject's outcome and the count behind it.
type Decision struct {
	Outcome Outcome
	// Verdicts counts the verdicts of the awaited agents by kind (pass,
	// flag, reject); Counted is their sum, Needed the quorum of them.
	Verdicts map[string]int
	Counted  int
	Needed   int
	Awaited  int
	// VetoBy is the agent that vetoed, when the outcome is vetoed.
	VetoBy string
	// Final is true once the window closed: the outcome stands.
	Final bool
}

// Decide combines the verdicts on s at now: the veto agent's reject is
// vetoed; with the quorum of awaited agents in, a majority of rejects is
// rejected, any reject or flag flagged, else passed; short of the quorum
// it is pending while the window is open and no-quorum once it closed.
// Verdicts of agents the subject does not await count for nothing, but a
// veto is a veto.
func Decide(s AttestationSubject, atts []Attestation, cfg AttestationConfig, now time.Time) Decision {
	cfg = cfg.orDefault()
	d := Decision{Verdicts: map[string]int{}, Awaited: len(s.Agents), Final: !now.Before(s.ClosesAt)}
	d.Needed = max(1, int(math.Ceil(cfg.Quorum*float64(len(s.Agents))-1e-9)))
	for _, a := range atts {
		if cfg.VetoAgent != "" && strings.EqualFold(a.Agent, cfg.VetoAgent) && a.Verdict == "reject" {
			d.VetoBy = a.Agent
		}
		if slices.ContainsFunc(s.Agents, func(name string) bool { return strings.EqualFold(name, a.Agent) }) {
			d.Verdicts[a.Verdict]++
			d.Counted++
		}
	}
	switch {
	case d.VetoBy != "":
		d.Outcome = OutcomeVetoed
	case d.Counted >= d.Needed && d.Verdicts["reject"]*2 > d.Counted:
		d.Outcome = OutcomeRejected
	case d.Counted >= d.Needed && d.Verdicts["reject"]+d.Verdicts["flag"] > 0:
		d.Outcome = OutcomeFlagged
	case d.Counted >= d.Needed:
		d.Outcome = OutcomePassed
	case d.Final:
		d.Outcome = OutcomeNoQuorum
	default:
		d.Outcome = OutcomePending
	}
	return d
}

// DecideAttestations combines the verdicts on every subject whose outcome
// may still change, stores each outcome that changed and relays it to the
// room once, in one transaction; a subject whose window has closed is
// final. It reports how many outcomes changed. The lease holder runs it.
func (f *Service) DecideAttestations(ctx context.Context) (int, error) {
	cfg := f.roster.Load().attest
	// Most of the time no subject is open: no write transaction then.
	undecided, err := f.deps.Attestations.UndecidedSubjects(ctx)
	if err != nil {
		return 0, fmt.Errorf("decide attestations: %w", err)
	}
	if len(undecided) == 0 {
		return 0, nil
	}
	changed := 0
	err = f.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		changed = 0
		now := f.deps.Clock.Now()
		subjects, err := f.deps.Attestations.UndecidedSubjects(ctx)
		if err != nil {
			return err
		}
		for _, s := range subjects {
			atts, err := f.deps.Attestations.Attestations(ctx, s.ID)
			if err != nil {
				return err
			}
			d := Decide(s, atts, cfg, now)
			if d.Outcome == s.Outcome && !d.Final {
				continue
			}
			var finalAt time.Time
			if d.Final {
				finalAt = now
			}
			seq := s.OutcomeSeq
			if d.Outcome != s.Outcome {
				seq++
				changed++
				if err := f.deps.Outbox.Enqueue(ctx, outcomeNotice(f.deps.Room, s, d, seq)); err != nil {
					return err
				}
			}
			if err := f.deps.Attestations.SetOutcome(ctx, s.ID, d.Outcome, seq, finalAt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("decide attestations: %w", err)
	}
	return changed, nil
}

// outcomeNotice tells the room a subject's outcome changed: "🗳️ seal-C-284-001
// (Seal C-284): passed — 3 of 3 verdicts in (pass 2, flag 1), quorum 2".
func outcomeNotice(room string, s AttestationSubject, d Decision, seq int) core.Notice {
	icon := map[Outcome]string{OutcomePassed: "✅", OutcomeFlagged: "⚠️", OutcomeRejected: "⛔", OutcomeVetoed: "⛔",
		OutcomeNoQuorum: "❔"}[d.Outcome]
	var b strings.Builder
	fmt.Fprintf(&b, "%s **Attestation %s**", icon, core.CodeSpan(s.ID))
	if s.Title != "" {
		fmt.Fprintf(&b, " (%s)", core.EscapeMarkdown(s.Title))
	}
	fmt.Fprintf(&b, ": %s — %s", d.Outcome, DecisionText(d))
	return core.Notice{Key: fmt.Sprintf("attest:%s:%d", s.ID, seq), Kind: core.NoticeMessage, RoomID: room, Body: b.String()}
}

// DecisionText says what a decision counted: "vetoed by ZEUS; 2 of 3
// verdicts in (pass 1, reject 1), quorum 2".
func DecisionText(d Decision) string {
	var parts []string
	for _, v := range []string{"pass", "flag", "reject"} {
		if n := d.Verdicts[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, n))
		}
	}
	text := fmt.Sprintf("%d of %d verdicts in", d.Counted, d.Awaited)
	if len(parts) > 0 {
		text += " (" + strings.Join(parts, ", ") + ")"
	}
	text += fmt.Sprintf(", quorum %d", d.Needed)
	if d.VetoBy != "" {
		text = "vetoed by " + d.VetoBy + "; " + text
	}
	return text
}

// RecentSubjects lists the subjects whose window closed after since, or is
// open, newest first, at most limit, with their outcomes and the count
// behind each.
func (f *Service) RecentSubjects(ctx context.Context, since time.Time, limit int) ([]AttestationSubject, []Decision, error) {
	subjects, err := f.deps.Attestations.RecentSubjects(ctx, since, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("recent subjects: %w", err)
	}
	cfg := f.roster.Load().attest
	now := f.deps.Clock.Now()
	decisions := make([]Decision, len(subjects))
	for i, s := range subjects {
		atts, err := f.deps.Attestations.Attestations(ctx, s.ID)
		if err != nil {
			return nil, nil, fmt.Errorf("recent subjects: %w", err)
		}
		decisions[i] = Decide(s, atts, cfg, now)
	}
	return subjects, decisions, nil
}
