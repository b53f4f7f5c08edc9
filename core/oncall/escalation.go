package oncall

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Config is the oncall section.
type Config struct {
	// EscalateAfter is how long an alert waits for a claim before the
	// admins are called in its thread, and then each next tier.
	EscalateAfter time.Duration
	// Escalation are the tiers called after the admins, in order, each
	// EscalateAfter after the last, while nobody claims the alert: a tier
	// is Matrix user IDs, mentioned in the alert's thread, and rooms (an
	// ID or an alias), posted into.
	Escalation [][]string
	// RemindEvery is how often the owner of a claimed alert that stays
	// open is reminded in its thread; 0 turns reminders off.
	RemindEvery time.Duration
	// SnoozeDefault is how long 💤 snoozes an alert or a trip push.
	SnoozeDefault time.Duration
	// ClaimHold is how long a claim holds without its owner renewing it
	// (claiming it again): then, with the alert still open, the claim
	// lapses and the alert is escalated again.
	ClaimHold time.Duration
	// MuteTimings are recurring maintenance windows.
	MuteTimings []MuteTiming
}

// Validate checks the section.
func (c Config) Validate() error {
	if c.EscalateAfter < time.Second {
		return core.Invalid("oncall.escalate_after", "must be at least 1s, got %s", c.EscalateAfter)
	}
	for i, tier := range c.Escalation {
		field := fmt.Sprintf("oncall.escalation[%d]", i)
		if len(tier) == 0 {
			return core.Invalid(field, "is empty: give Matrix user IDs or a room")
		}
		for _, to := range tier {
			if !isUser(to) && !IsRoom(to) {
				return core.Invalid(field, "%q is not a Matrix user ID or room (@user:server, !room:server or #alias:server)", to)
			}
		}
	}
	if c.RemindEvery != 0 && c.RemindEvery < time.Second {
		return core.Invalid("oncall.remind_every", "must be 0 (no reminders) or at least 1s, got %s", c.RemindEvery)
	}
	if c.ClaimHold < time.Second {
		return core.Invalid("oncall.claim_hold", "must be at least 1s, got %s", c.ClaimHold)
	}
	for i, m := range c.MuteTimings {
		if err := m.check(i); err != nil {
			return err
		}
	}
	if c.SnoozeDefault < time.Second || c.SnoozeDefault > MaxSnooze {
		return core.Invalid("oncall.snooze_default", "must be between 1s and %s, got %s", core.HumanDuration(MaxSnooze), c.SnoozeDefault)
	}
	return nil
}

// IsRoom reports whether a tier's entry is a room (an ID or an alias) to
// post into rather than a person to mention.
func IsRoom(to string) bool {
	return (strings.HasPrefix(to, "!") || strings.HasPrefix(to, "#")) && matrixID(to)
}

func isUser(to string) bool { return strings.HasPrefix(to, "@") && matrixID(to) }

// matrixID reports whether s is a sigil, a local part, a colon and a
// server name, with no spaces.
func matrixID(s string) bool {
	local, server, ok := strings.Cut(s[1:], ":")
	return ok && local != "" && server != "" && !strings.ContainsAny(s, " \t\r\n")
}

// EscalationKeyPrefix starts the key of an escalation, followed by its
// incident's ID (and, past the admins, the tier): `mine` replied to it
// (or written in the alert's thread after it) claims the incident.
const EscalationKeyPrefix = "escalated:"

// tierSuffix follows the incident's ID in the key of an escalation to a
// tier past the admins.
const tierSuffix = ":tier"

// EscalationKey is the key of the escalation of incident id to tier (0
// for the admins).
func EscalationKey(id string, tier int) string {
	if tier == 0 {
		return EscalationKeyPrefix + id
	}
	return EscalationKeyPrefix + id + tierSuffix + strconv.Itoa(tier)
}

// IncidentOfEscalation returns the incident an escalation's key names.
func IncidentOfEscalation(key string) (string, bool) {
	id, ok := strings.CutPrefix(key, EscalationKeyPrefix)
	if i := strings.LastIndex(id, tierSuffix); i >= 0 {
		if _, err := strconv.Atoi(id[i+len(tierSuffix):]); err == nil {
			id = id[:i]
		}
	}
	return id, ok && id != ""
}

// tiers are who is called, in order: the admins (a reply in the alert's
// thread even when there are none), then oncall.escalation.
func (s *Service) tiers() [][]string {
	return append([][]string{s.deps.Admins}, s.cfg.Escalation...)
}

// Escalate calls the next tier of every alert nobody claimed within
// oncall.escalate_after of its opening, or of the last tier called: each
// tier once, each in a transaction of its own, until someone claims it,
// it resolves or no tier is left. It returns how many it called. It
// writes, so only the lease holder runs it.
func (s *Service) Escalate(ctx context.Context) (int, error) {
	tiers := s.tiers()
	due, err := s.deps.Store.Unclaimed(ctx, s.deps.Clock.Now().Add(-s.cfg.EscalateAfter), len(tiers))
	if err != nil {
		return 0, fmt.Errorf("escalate incidents: %w", err)
	}
	raised := 0
	var errs []error
	for _, inc := range due {
		if inc.Snoozed(s.deps.Clock.Now()) || !inc.Posted() {
			continue
		}
		err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
			cur, err := s.current(ctx, inc)
			if err != nil || cur.Snoozed(s.deps.Clock.Now()) || !cur.Posted() {
				return err
			}
			ok, err := s.deps.Store.EscalateIncident(ctx, inc.ID, inc.Tier, s.deps.Clock.Now())
			if err != nil || !ok {
				return err
			}
			raised++
			for _, n := range s.escalation(cur, tiers[inc.Tier]) {
				if err := s.enqueue(ctx, n); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("escalate incident %s: %w", inc.ID, err))
		}
	}
	return raised, errors.Join(errs...)
}

// current reads, inside a sweep's transaction, the incident the sweep
// listed before it: its alert may have been replaced since (an agent's
// missed heartbeats, then its going offline) or its claim moved on, and a
// call or reminder goes to the alert and owner that stand now. The tier
// and reminder time stay the listed ones, which the store's
// compare-and-swap checks. One gone meanwhile is not posted.
func (s *Service) current(ctx context.Context, listed Incident) (Incident, error) {
	cur, err := s.deps.Store.Incident(ctx, listed.ID)
	if errors.Is(err, core.ErrNotFound) {
		return Incident{}, nil
	}
	if err != nil {
		return cur, err
	}
	cur.Tier, cur.RemindedAt = listed.Tier, listed.RemindedAt
	return cur, nil
}

// escalation calls one tier to an alert: a reply in its thread mentioning
// the tier's people, and a message in each of its rooms.
func (s *Service) escalation(inc Incident, tier []string) []core.Notice {
	waited := core.HumanDuration(time.Duration(inc.Tier+1) * s.cfg.EscalateAfter)
	var people, names []string
	var out []core.Notice
	for _, to := range tier {
		if !IsRoom(to) {
			people, names = append(people, to), append(names, core.EscapeMarkdown(to))
			continue
		}
		headline, _, _ := strings.Cut(strings.TrimSpace(inc.Body), "\n")
		out = append(out, core.Notice{Key: EscalationKey(inc.ID, inc.Tier) + ":" + to, RoomID: to, Kind: core.NoticeMessage,
			Body: fmt.Sprintf("🔔 An alert in Jarvis's room has waited %s for someone to claim it: %s\n\nClaim it there: tap %s on it or reply `%s`.",
				waited, headline, ClaimReaction, ClaimWord)})
	}
	if len(people) > 0 || len(out) == 0 {
		body := fmt.Sprintf("Nobody has claimed this alert in %s. Tap %s on it or reply `%s` to take it.", waited, ClaimReaction, ClaimWord)
		if len(people) > 0 {
			body = strings.Join(names, ", ") + ": " + body
		}
		out = append([]core.Notice{{Key: EscalationKey(inc.ID, inc.Tier), RoomID: inc.RoomID, Kind: core.NoticeMessage, Body: body,
			Mentions: people, Target: inc.NoticeKey, Thread: true}}, out...)
	}
	return out
}

// Remind reminds, in its thread, the owner of every claimed alert that
// stayed open oncall.remind_every since it was claimed or they were last
// reminded, each in a transaction of its own, and returns how many it
// reminded. It writes, so only the lease holder runs it.
func (s *Service) Remind(ctx context.Context) (int, error) {
	if s.cfg.RemindEvery == 0 {
		return 0, nil
	}
	due, err := s.deps.Store.Unreminded(ctx, s.deps.Clock.Now().Add(-s.cfg.RemindEvery))
	if err != nil {
		return 0, fmt.Errorf("remind incident owners: %w", err)
	}
	reminded := 0
	var errs []error
	for _, inc := range due {
		if inc.Snoozed(s.deps.Clock.Now()) || !inc.Posted() {
			continue
		}
		err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
			now := s.deps.Clock.Now()
			inc, err := s.current(ctx, inc)
			if err != nil || inc.Snoozed(now) || !inc.Posted() {
				return err
			}
			ok, err := s.deps.Store.RemindIncident(ctx, inc.ID, inc.RemindedAt, now)
			if err != nil || !ok {
				return err
			}
			reminded++
			return s.enqueue(ctx, core.Notice{Key: fmt.Sprintf("reminded:%s:%d", inc.ID, now.UnixMilli()), RoomID: inc.RoomID,
				Kind: core.NoticeMessage, Mentions: []string{inc.Owner}, Target: inc.NoticeKey, Thread: true,
				Body: fmt.Sprintf("%s: this alert is still open; you have had it for %s, since %s. It closes by itself when what it reported resolves. "+
					"Reply `%s` to keep it: otherwise your claim lapses at %s and it is escalated again.",
					core.EscapeMarkdown(inc.Owner), core.HumanDuration(now.Sub(inc.ClaimedAt)), stamp(inc.ClaimedAt), ClaimWord,
					stamp(inc.ClaimedAt.Add(s.cfg.ClaimHold)))})
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("remind the owner of incident %s: %w", inc.ID, err))
		}
	}
	return reminded, errors.Join(errs...)
}
