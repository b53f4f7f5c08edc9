// Package approval is the permission relay Jarvis runs for agents: an agent
// asks before a risky action, Jarvis relays the request to the room (and
// reminds of it, through the wake router, while it waits), the approver it
// names (or an admin) approves or denies it once, and at the deadline its
// default applies. The state machine is a compare-and-swap on the request's
// status, so two answers at once decide once. Jarvis's own store is the
// approval queue here; a gateway that keeps one elsewhere would implement
// Store.
package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// Status is where a request stands. Every status but Pending is final.
type Status string

// The statuses.
const (
	// Pending waits for an answer.
	Pending Status = "pending"
	// Approved was approved, by a person or by its default.
	Approved Status = "approved"
	// Denied was denied, by a person or by its default.
	Denied Status = "denied"
	// Expired reached its deadline with no answer and no default: the
	// action must not be taken.
	Expired Status = "expired"
)

// The words a request's default is given in, besides an option's text.
const (
	DefaultApprove = "approve"
	DefaultDeny    = "deny"
)

// Limits on a request.
const (
	MaxKeyLen      = 200
	MaxAgentLen    = 64
	MaxActionLen   = 200
	MaxReasonLen   = 2000
	MaxApproverLen = 255
	MinOptions     = 2
	MaxOptions     = 9
	MaxOptionLen   = 200
	// MaxDeadline is how far ahead a deadline may lie.
	MaxDeadline = 30 * 24 * time.Hour
)

// idPrefix starts every request id.
const idPrefix = "apr_"

// Input is what an agent asks.
type Input struct {
	// Key is the agent's idempotency key: the same key with the same
	// request returns the first request; with another, ErrUnprocessable.
	Key    string
	Agent  string
	Action string
	Reason string
	// Options, when given, are the ways to approve (2 to MaxOptions); a
	// request without them is approved or denied as it stands.
	Options []string
	// Approver, when set, is the Matrix account asked; otherwise the
	// admins are.
	Approver string
	// Deadline, when set, is when the request closes: Default applies
	// then, or the request expires when there is none.
	Deadline time.Time
	// Default is DefaultApprove, DefaultDeny or one of Options.
	Default string
}

// Approval is a request and what became of it.
type Approval struct {
	ID          string
	Key         string
	Fingerprint string
	Agent       string
	Action      string
	Reason      string
	Options     []string
	Approver    string
	// Asked are the people the request was put to: the approver, or the
	// admins.
	Asked    []string
	Deadline time.Time
	Default  string
	Status   Status
	// Option is the option approved (from 1), 0 when there are none or
	// the request was denied.
	Option int
	// Defaulted is true when the deadline decided.
	Defaulted bool
	// DecidedBy and Network say who answered and from which network.
	DecidedBy   string
	Network     string
	RequestedAt time.Time
	DecidedAt   time.Time
}

// NoticeKey is the key of the message that relays the request to the
// room. Reactions and replies to it (and to the notices threaded under
// it) answer the request.
func (a Approval) NoticeKey() string { return "approval:" + a.ID }

// IDFromKey returns the request id a notice key names: approval:<id>,
// maybe with a suffix such as :deadline.
func IDFromKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "approval:")
	id, _, _ := strings.Cut(rest, ":")
	return id, ok && strings.HasPrefix(id, idPrefix)
}

// Verdict is a person's answer: approve (with an option, when the request
// has options) or deny.
type Verdict struct {
	Approve bool
	// Option is the option approved, from 1; 0 when there are none.
	Option int
}

// Store keeps requests.
type Store interface {
	// InsertApproval writes a new request.
	InsertApproval(ctx context.Context, a Approval) error
	// Approval returns a request by id, or ErrNotFound.
	Approval(ctx context.Context, id string) (Approval, error)
	// ApprovalByKey returns an agent's request by its idempotency key, or
	// ErrNotFound.
	ApprovalByKey(ctx context.Context, agent, key string) (Approval, error)
	// DecideApproval writes the outcome of a pending request and returns
	// ErrConflict when it is no longer pending: the compare-and-swap.
	DecideApproval(ctx context.Context, a Approval) error
	// DueApprovals returns up to limit pending requests whose deadline has
	// come at now, soonest first.
	DueApprovals(ctx context.Context, now time.Time, limit int) ([]Approval, error)
	// PendingApprovals returns every pending request, oldest first.
	PendingApprovals(ctx context.Context) ([]Approval, error)
	// MoveApprover makes to the approver, and one of the people asked,
	// instead of from, in every pending request that names or asks from,
	// and says how many.
	MoveApprover(ctx context.Context, from, to string) (int, error)
	// CountApprovals says how many of the agent's requests are pending,
	// and how many it made after since.
	CountApprovals(ctx context.Context, agent string, since time.Time) (pending, recent int, err error)
}

// Config is the approvals section of the configuration: the operator's
// policy of who decides, which no request can widen, and how much one
// agent may ask. In a Config built in code (as tests build it), a zero
// MaxOpen or Rate.Count sets no limit.
type Config struct {
	// RemindAfter is how long a request waits before the wake router
	// names it to the people asked, and again each time as long after.
	RemindAfter time.Duration
	// Approvers are the Matrix accounts an agent may name as a request's
	// approver, besides the admins; a request naming anyone else is
	// refused. A request that names nobody is put to the admins.
	Approvers []string
	// DeadlineMayApprove says whether a request's default may approve it
	// at its deadline, with nobody answering; when false a default may
	// only deny.
	DeadlineMayApprove bool
	// MinApproveDeadline is how far ahead a deadline whose default
	// approves must lie, so that people have time to answer.
	MinApproveDeadline time.Duration
	// MaxOpen is how many of one agent's requests may wait for an answer
	// at once.
	MaxOpen int
	// Rate is how many requests one agent may make within a window.
	Rate Rate
}

// Rate is a count of requests within a trailing window.
type Rate struct {
	Count  int
	Window time.Duration
}

// Validate checks the section.
func (c Config) Validate() error {
	switch {
	case c.RemindAfter < time.Minute:
		return core.Invalid("approvals.remind_after", "must be at least 1m, got %s", c.RemindAfter)
	case c.MaxOpen < 1:
		return core.Invalid("approvals.max_open", "must be at least 1, got %d", c.MaxOpen)
	case c.Rate.Count < 1:
		return core.Invalid("approvals.rate.count", "must be at least 1, got %d", c.Rate.Count)
	case c.Rate.Window < time.Second:
		return core.Invalid("approvals.rate.window", "must be at least 1s, got %s", c.Rate.Window)
	}
	for i, a := range c.Approvers {
		if !isUserID(a) {
			return core.Invalid(fmt.Sprintf("approvals.approvers[%d]", i), "%q is not a Matrix user ID such as @alice:example.org", a)
		}
	}
	if c.MinApproveDeadline < time.Minute || c.MinApproveDeadline > MaxDeadline {
		return core.Invalid("approvals.min_approve_deadline", "must be between 1m and %s, got %s", core.ClockDuration(MaxDeadline), c.MinApproveDeadline)
	}
	return nil
}

// Deps are what the service works with.
type Deps struct {
	Store  Store
	Tx     core.Transactor
	Outbox core.Outbox
	Clock  core.Clock
	// Room is the dedicated room requests are relayed to.
	Room string
	// Admins are asked when a request names no approver, and may always
	// answer.
	Admins []string
	// MayAsk says whether Jarvis talks to an account at all (the allowed
	// users): an approver it would not listen to is refused.
	MayAsk func(userID string) bool
	// OnChange, when set, hears that a request appeared or was decided,
	// once the change is committed.
	OnChange func()
	// Incidents, when set, keeps every request waiting as an on-call
	// incident: 👀 claims it, its decision or deadline resolves it.
	Incidents *oncall.Service
}

// Service relays and decides approval requests.
type Service struct {
	cfg  Config
	deps Deps
	ids  core.IDSource
}

// NewService returns the service. cfg must have passed Validate.
func NewService(cfg Config, deps Deps) *Service {
	return &Service{cfg: cfg, deps: deps}
}

// errNoRoom means the service was wired without a room.
var errNoRoom = errors.New("the approval service has no room to relay requests to")

// Result is what answering did. AlreadyDecided is true when the request
// had been decided before: nothing changed, and Approval shows the outcome
// that stands.
type Result struct {
	Approval       Approval
	AlreadyDecided bool
}

// validate checks a request at now.
func (in Input) validate(now time.Time) error {
	switch {
	case strings.TrimSpace(in.Key) == "":
		return core.Invalid("Idempotency-Key", "is required")
	case len(in.Key) > MaxKeyLen:
		return core.Invalid("Idempotency-Key", "longer than %d bytes", MaxKeyLen)
	case strings.TrimSpace(in.Agent) == "":
		return core.Invalid("agent", "is required")
	case len(in.Agent) > MaxAgentLen:
		return core.Invalid("agent", "longer than %d bytes", MaxAgentLen)
	case strings.TrimSpace(in.Action) == "":
		return core.Invalid("action", "is required: say what you want to do")
	case len(in.Action) > MaxActionLen:
		return core.Invalid("action", "longer than %d bytes", MaxActionLen)
	case strings.ContainsAny(in.Action, "\r\n"):
		return core.Invalid("action", "must be one line")
	case strings.TrimSpace(in.Reason) == "":
		return core.Invalid("reason", "is required: say why")
	case len(in.Reason) > MaxReasonLen:
		return core.Invalid("reason", "longer than %d bytes", MaxReasonLen)
	case len(in.Approver) > MaxApproverLen:
		return core.Invalid("approver", "longer than %d bytes", MaxApproverLen)
	case in.Approver != "" && !isUserID(in.Approver):
		return core.Invalid("approver", "must be a Matrix user ID such as @alice:example.org")
	case len(in.Options) == 1 || len(in.Options) > MaxOptions:
		return core.Invalid("options", "give %d to %d options, or none, not %d", MinOptions, MaxOptions, len(in.Options))
	case !in.Deadline.IsZero() && !in.Deadline.After(now):
		return core.Invalid("deadline", "must be in the future")
	case in.Deadline.Sub(now) > MaxDeadline:
		return core.Invalid("deadline", "must be within %s", core.ClockDuration(MaxDeadline))
	case in.Default != "" && in.Deadline.IsZero():
		return core.Invalid("default", "applies at a deadline; give one")
	}
	if err := core.CheckOptions(in.Options, MaxOptionLen); err != nil {
		return err
	}
	if in.Default != "" && in.Default != DefaultDeny && !slices.Contains(in.options(), in.Default) {
		return core.Invalid("default", "must be %q or %s", DefaultDeny, orList(in.options()))
	}
	return nil
}

// options are the ways to approve: the request's options, or "approve".
func (in Input) options() []string {
	if len(in.Options) == 0 {
		return []string{DefaultApprove}
	}
	return in.Options
}

// isUserID reports whether s looks like a Matrix user ID, @local:server.
func isUserID(s string) bool {
	local, server, ok := strings.Cut(strings.TrimPrefix(s, "@"), ":")
	return strings.HasPrefix(s, "@") && ok && local != "" && server != "" && !strings.ContainsAny(s, " \t\r\n")
}

// fingerprint hashes what the request asks, so that a retry with the same
// key and request is recognised.
func (in Input) fingerprint() string {
	b, _ := json.Marshal([]any{in.Agent, in.Action, in.Reason, in.Options, in.Approver, in.Deadline.UnixMilli(), in.Default})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Request records an agent's request and, in the same transaction, relays
// it to the room, mentioning the people asked, with a reaction per way of
// answering already under it. A retry with the same key and request
// returns the first one (replayed true) and relays nothing again; the same
// key with another request is ErrUnprocessable.
func (s *Service) Request(ctx context.Context, in Input) (a Approval, replayed bool, err error) {
	now := s.deps.Clock.Now()
	in.Action, in.Reason, in.Approver = strings.TrimSpace(in.Action), strings.TrimSpace(in.Reason), strings.TrimSpace(in.Approver)
	for i := range in.Options {
		in.Options[i] = strings.TrimSpace(in.Options[i])
	}
	if err := in.validate(now); err != nil {
		return Approval{}, false, err
	}
	if s.deps.Room == "" {
		return Approval{}, false, errNoRoom
	}
	if err := s.checkPolicy(in, now); err != nil {
		return Approval{}, false, err
	}
	asked := s.deps.Admins
	if in.Approver != "" {
		asked = []string{in.Approver}
	} else if len(asked) == 0 {
		return Approval{}, false, core.Invalid("approver", "is required: no admins are configured to ask")
	}
	fp := in.fingerprint()
	err = s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		prev, err := s.deps.Store.ApprovalByKey(ctx, in.Agent, in.Key)
		switch {
		case err == nil && prev.Fingerprint == fp:
			a, replayed = prev, true
			return nil
		case err == nil:
			return core.Refuse(core.ErrUnprocessable, "idempotency key %q was used for another request (%s)", in.Key, prev.ID)
		case !errors.Is(err, core.ErrNotFound):
			return err
		}
		if err := s.withinLimits(ctx, in.Agent, now); err != nil {
			return err
		}
		a = Approval{ID: s.ids.Next(idPrefix, now), Key: in.Key, Fingerprint: fp, Agent: in.Agent, Action: in.Action,
			Reason: in.Reason, Options: in.Options, Approver: in.Approver, Asked: slices.Clone(asked),
			Deadline: in.Deadline, Default: in.Default, Status: Pending, RequestedAt: now}
		if err := s.deps.Store.InsertApproval(ctx, a); err != nil {
			return err
		}
		notices := []core.Notice{{Key: a.NoticeKey(), RoomID: s.deps.Room, Kind: core.NoticeMessage,
			Body: relayBody(a), Mentions: a.Asked}}
		for i, r := range reactions(a) {
			notices = append(notices, core.Notice{Key: fmt.Sprintf("%s:react:%d", a.NoticeKey(), i+1), RoomID: s.deps.Room,
				Kind: core.NoticeReaction, Body: r, Target: a.NoticeKey()})
		}
		for _, n := range notices {
			if err := s.deps.Outbox.Enqueue(ctx, n); err != nil {
				return err
			}
		}
		return s.trackRequest(ctx, a, notices[0])
	})
	if le := (*core.LimitError)(nil); errors.As(err, &le) {
		s.tellRefused(ctx, in.Agent, le, now)
	}
	if err != nil {
		return Approval{}, false, fmt.Errorf("request approval for %s: %w", in.Agent, err)
	}
	if !replayed {
		s.changed()
	}
	return a, replayed, nil
}

// checkPolicy refuses a request that asks for more than the operator's
// policy allows: an approver outside approvals.approvers and the admins,
// or a default that approves when approvals.deadline_may_approve is off
// or with a deadline nearer than approvals.min_approve_deadline. Each
// refusal names the key that would allow it.
func (s *Service) checkPolicy(in Input, now time.Time) error {
	if in.Approver != "" {
		if !slices.Contains(s.cfg.Approvers, in.Approver) && !slices.Contains(s.deps.Admins, in.Approver) {
			return core.Invalid("approver", "%s is not an approver agents may name: the operator lists them in approvals.approvers (leave approver out to ask the admins)", in.Approver)
		}
		if s.deps.MayAsk != nil && !s.deps.MayAsk(in.Approver) {
			return core.Invalid("approver", "%s is not someone Jarvis talks to", in.Approver)
		}
	}
	if in.Default == "" || in.Default == DefaultDeny {
		return nil
	}
	if !s.cfg.DeadlineMayApprove {
		return core.Invalid("default", "may only be %q: no request is approved by its deadline while approvals.deadline_may_approve is off", DefaultDeny)
	}
	if in.Deadline.Sub(now) < s.cfg.MinApproveDeadline {
		return core.Invalid("deadline", "a deadline whose default approves must be at least %s away (approvals.min_approve_deadline)",
			core.HumanDuration(s.cfg.MinApproveDeadline))
	}
	return nil
}

// withinLimits refuses a new request of the agent's past approvals.max_open
// or approvals.rate.
func (s *Service) withinLimits(ctx context.Context, agent string, now time.Time) error {
	if s.cfg.MaxOpen < 1 && s.cfg.Rate.Count < 1 {
		return nil
	}
	pending, recent, err := s.deps.Store.CountApprovals(ctx, agent, now.Add(-s.cfg.Rate.Window))
	switch {
	case err != nil:
		return err
	case s.cfg.MaxOpen > 0 && pending >= s.cfg.MaxOpen:
		return core.OverLimit(core.ErrRateLimited, "approvals.max_open",
			"%s has %d requests waiting for an answer, the most an agent may; ask again once one is decided", agent, pending)
	case s.cfg.Rate.Count > 0 && recent >= s.cfg.Rate.Count:
		return core.OverLimit(core.ErrRateLimited, "approvals.rate",
			"%s made %d requests within %s, the most an agent may", agent, recent, core.ClockDuration(s.cfg.Rate.Window))
	}
	return nil
}

// tellRefused tells the room, once per agent and limit within
// approvals.rate.window, that the agent's requests are being refused: a
// flood of them is this one line, not a relay each. The line is written
// in a transaction of its own, as the refused request wrote nothing.
func (s *Service) tellRefused(ctx context.Context, agent string, le *core.LimitError, now time.Time) {
	window := max(s.cfg.Rate.Window, time.Minute)
	key := fmt.Sprintf("approval-refused:%s:%s:%d", agent, le.Key, now.Truncate(window).Unix())
	body := fmt.Sprintf("🚫 **%s** is asking for approval past `%s`: its further requests are refused (429) and not posted here. "+
		"This is said once per %s.", core.EscapeMarkdown(agent), le.Key, core.ClockDuration(window))
	// Telling is best effort: the refusal stands whether or not this line
	// is written, and a second refusal in the window finds it written.
	_ = s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		return s.deps.Outbox.Enqueue(ctx, core.Notice{Key: key, RoomID: s.deps.Room, Kind: core.NoticeMessage, Body: body, Coalesce: true})
	})
}

// Adopt gives the pending requests a bridged puppet is the approver of,
// or is asked, to the Matrix account it was just linked to, and says how
// many: a puppet's answers come as the account from then on.
func (s *Service) Adopt(ctx context.Context, from, to string) (int, error) {
	var n int
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		var err error
		n, err = s.deps.Store.MoveApprover(ctx, from, to)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("move the requests asked of %s to %s: %w", from, to, err)
	}
	return n, nil
}

// Get returns a request by id.
func (s *Service) Get(ctx context.Context, id string) (Approval, error) {
	a, err := s.deps.Store.Approval(ctx, id)
	if err != nil {
		return Approval{}, fmt.Errorf("approval %q: %w", id, err)
	}
	return a, nil
}

// Decider is who answers a request: the account they answer as, the
// network they wrote from, and the trust of what they write there.
type Decider struct {
	Who     string
	Network string
	Trust   core.Trust
}

// Decide applies a person's verdict on request id. Only the people asked
// and the admins may decide (ErrForbidden for anyone else, who changes
// nothing; see mayDecide); an option out of range is ErrInvalid; an
// expired request is ErrExpired. The first verdict wins and the relay is
// edited to show it; a later one changes nothing and comes back with
// AlreadyDecided.
func (s *Service) Decide(ctx context.Context, id string, v Verdict, by Decider) (Result, error) {
	who, network := by.Who, by.Network
	if strings.TrimSpace(who) == "" {
		return Result{}, core.Invalid("who", "is required")
	}
	var out Result
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		a, err := s.deps.Store.Approval(ctx, id)
		if err != nil {
			return err
		}
		if err := s.mayDecide(a, by); err != nil {
			return err
		}
		switch a.Status {
		case Approved, Denied:
			out = Result{Approval: a, AlreadyDecided: true}
			return nil
		case Expired:
			return core.Refuse(core.ErrExpired, "approval %s expired unanswered at %s", a.ID, core.DeadlineText(a.Deadline))
		}
		if v.Approve && (len(a.Options) > 0) != (v.Option > 0) || v.Option < 0 || v.Option > len(a.Options) {
			return core.Invalid("option", "approval %s has %s", a.ID, optionsText(a))
		}
		a.Status, a.Option = Denied, 0
		if v.Approve {
			a.Status, a.Option = Approved, v.Option
		}
		a.DecidedBy, a.Network, a.DecidedAt = who, network, s.deps.Clock.Now()
		if err := s.deps.Store.DecideApproval(ctx, a); err != nil {
			return err
		}
		out = Result{Approval: a}
		return s.close(ctx, a, nil)
	})
	if err != nil {
		return Result{}, fmt.Errorf("decide approval %q: %w", id, err)
	}
	if !out.AlreadyDecided {
		s.changed()
	}
	return out, nil
}

// mayDecide refuses anyone but the people asked and the admins, and those
// too when they answer from where they may not: a bridged account linked
// to nobody answers nothing, and an admin answers only from their own
// Matrix account (so a puppet linked to an admin, by a link the admin was
// talked into, cannot approve in their name). The refusal, ErrForbidden,
// says why in words for the person refused.
func (s *Service) mayDecide(a Approval, by Decider) error {
	admin := slices.Contains(s.deps.Admins, by.Who)
	switch {
	case !by.Trust.AtLeast(core.TrustLinked):
		return core.Refuse(core.ErrForbidden, "A bridged account linked to nobody cannot answer approval requests; link it to your Matrix account first")
	case !slices.Contains(a.Asked, by.Who) && !admin:
		return core.Refuse(core.ErrForbidden, "Only the approver the request names (or an admin) can answer it")
	case admin && !by.Trust.AtLeast(core.TrustNative):
		return core.Refuse(core.ErrForbidden, "An admin answers approval requests only from their own Matrix account, not through a bridge")
	}
	return nil
}

// SweepBatch is how many due requests one Sweep handles at most.
const SweepBatch = 100

// Sweep closes the requests whose deadline has come, as the clock says:
// the default applies, or the request expires when it has none, and the
// relay is edited and answered under to say so. Each request is handled in
// its own transaction, read again inside it, so that an answer that came
// in meanwhile wins. It returns how many it closed.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	due, err := s.deps.Store.DueApprovals(ctx, s.deps.Clock.Now(), SweepBatch)
	if err != nil {
		return 0, fmt.Errorf("sweep approvals: %w", err)
	}
	closed := 0
	for _, d := range due {
		err = s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
			a, err := s.deps.Store.Approval(ctx, d.ID)
			if err != nil || a.Status != Pending {
				return err
			}
			now := s.deps.Clock.Now()
			if a.Deadline.IsZero() || now.Before(a.Deadline) {
				return nil
			}
			switch {
			case a.Default == DefaultDeny:
				a.Status = Denied
			case a.Default != "":
				a.Status, a.Option = Approved, slices.Index(a.Options, a.Default)+1
			default:
				a.Status = Expired
			}
			a.Defaulted, a.DecidedAt = a.Default != "", now
			if err := s.deps.Store.DecideApproval(ctx, a); err != nil {
				return err
			}
			closed++
			return s.close(ctx, a, &core.Notice{Key: a.NoticeKey() + ":deadline", RoomID: s.deps.Room,
				Kind: core.NoticeMessage, Body: deadlineBody(a), Mentions: a.Asked, Target: a.NoticeKey()})
		})
		if err != nil {
			err = fmt.Errorf("sweep approval %s: %w", d.ID, err)
			break
		}
	}
	if closed > 0 {
		s.changed()
	}
	return closed, err
}

// WakeConditions are the requests still pending RemindAfter after they
// were made, for the wake router: each is named once to the people asked,
// and again every RemindAfter while it waits.
func (s *Service) WakeConditions(ctx context.Context) ([]core.WakeCondition, error) {
	pending, err := s.deps.Store.PendingApprovals(ctx)
	if err != nil {
		return nil, fmt.Errorf("pending approvals: %w", err)
	}
	now := s.deps.Clock.Now()
	var out []core.WakeCondition
	for _, a := range pending {
		if now.Sub(a.RequestedAt) < s.cfg.RemindAfter {
			continue
		}
		fields := []core.WakeField{{Name: "approval", Value: a.ID}, {Name: "agent", Value: a.Agent}, {Name: "action", Value: a.Action},
			{Name: "waiting", Value: core.ClockDuration(now.Sub(a.RequestedAt).Truncate(time.Minute))}}
		if !a.Deadline.IsZero() {
			fields = append(fields, core.WakeField{Name: "deadline", Value: core.DeadlineText(a.Deadline) + ", then " + afterDeadline(a)})
		}
		out = append(out, core.WakeCondition{
			Key: "approval-pending:" + a.ID, Source: "approvals", Fingerprint: string(a.Status),
			Title:  "an agent's approval request is still waiting (react to the request, or reply approve / deny)",
			Fields: fields, Backoff: s.cfg.RemindAfter, Mentions: a.Asked,
		})
	}
	return out, nil
}

// Pending returns every pending request, oldest first.
func (s *Service) Pending(ctx context.Context) ([]Approval, error) {
	return s.deps.Store.PendingApprovals(ctx)
}

func (s *Service) changed() {
	if s.deps.OnChange != nil {
		s.deps.OnChange()
	}
}

// close tells the room that request a, just decided, closed: the relay
// is edited to its outcome. When that resolved its incident, the edit
// says so too, and one reply in its thread (the deadline's, or one saying
// the outcome) says all clear.
func (s *Service) close(ctx context.Context, a Approval, reply *core.Notice) error {
	summary, err := s.resolveRequest(ctx, a)
	if err != nil {
		return err
	}
	edit := core.Notice{Key: a.NoticeKey() + ":outcome", RoomID: s.deps.Room, Kind: core.NoticeEdit, Body: relayBody(a), Target: a.NoticeKey()}
	if summary != "" {
		edit.Body += "\n\n✅ Resolved: " + summary + "."
		if reply == nil {
			reply = &core.Notice{Key: a.NoticeKey() + ":all-clear", RoomID: s.deps.Room, Kind: core.NoticeMessage, Body: outcomeLine(a), Target: a.NoticeKey()}
		}
		reply.Body += " All clear: " + summary + "."
		reply.Thread = true
	}
	notices := []core.Notice{edit}
	if reply != nil {
		notices = append(notices, *reply)
	}
	for _, n := range notices {
		if err := s.deps.Outbox.Enqueue(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// ApproveEmoji and DenyEmoji answer a request without options.
const (
	ApproveEmoji = "✅"
	DenyEmoji    = "❌"
)

// optionEmoji stand for options 1 to MaxOptions.
var optionEmoji = []string{"1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣"}

// reactions are the reactions Jarvis puts under a relay: ✅ ❌, or one per
// option and ❌.
func reactions(a Approval) []string {
	if len(a.Options) == 0 {
		return []string{ApproveEmoji, DenyEmoji}
	}
	return append(slices.Clone(optionEmoji[:len(a.Options)]), DenyEmoji)
}

// IsReaction reports whether answer is one of the reactions that answer
// a request (rather than a reply's text).
func IsReaction(answer string) bool {
	if answer == ApproveEmoji || answer == DenyEmoji {
		return true
	}
	for _, e := range optionEmoji {
		if answer == e || answer == strings.ReplaceAll(e, "\uFE0F", "") {
			return true
		}
	}
	return false
}

// ParseVerdict reads an answer to request a: a reaction (✅, ❌, an
// option's keycap), or a reply: approve / yes / ok, deny / no, an
// option's number or its text. Nothing is guessed: anything else is not a
// verdict.
func ParseVerdict(a Approval, answer string) (Verdict, bool) {
	s := strings.TrimRight(strings.ToLower(strings.Join(strings.Fields(answer), " ")), ".!")
	switch s {
	case DenyEmoji, "✖", "✖️", "deny", "denied", "no", "reject":
		return Verdict{}, true
	case ApproveEmoji, "✔", "✔️", "approve", "approved", "yes", "ok":
		return Verdict{Approve: true}, len(a.Options) == 0
	}
	for i, o := range a.Options {
		if s == strings.ToLower(o) || s == fmt.Sprint(i+1) || answer == optionEmoji[i] ||
			answer == strings.ReplaceAll(optionEmoji[i], "\uFE0F", "") {
			return Verdict{Approve: true, Option: i + 1}, true
		}
	}
	return Verdict{}, false
}

// relayBody is the relay message: who is asked, the agent and its action,
// the reason, the options, then how to answer — or, once closed, the
// outcome. Everything the agent wrote is escaped.
func relayBody(a Approval) string {
	var b strings.Builder
	b.WriteString(strings.Join(a.Asked, " ") + ": ")
	fmt.Fprintf(&b, "agent %s asks for approval to: %s\n\nReason: %s\n\n", core.EscapeMarkdown(a.Agent),
		core.EscapeMarkdown(a.Action), core.EscapeMarkdown(a.Reason))
	for i, o := range a.Options {
		fmt.Fprintf(&b, "%d. %s\n", i+1, core.EscapeMarkdown(o))
	}
	if len(a.Options) > 0 {
		b.WriteString("\n")
	}
	if a.Status != Pending {
		b.WriteString(outcomeLine(a))
		return b.String()
	}
	if len(a.Options) == 0 {
		b.WriteString("React ✅ to approve or ❌ to deny, or reply approve or deny.")
	} else {
		b.WriteString("React with the option's number to approve it or ❌ to deny, or reply with the number or deny.")
	}
	if !a.Deadline.IsZero() {
		fmt.Fprintf(&b, " Deadline: %s, then %s.", core.DeadlineText(a.Deadline), afterDeadline(a))
	}
	return b.String()
}

// outcomeLine says how a closed request ended.
func outcomeLine(a Approval) string {
	what := "Denied"
	if a.Status == Approved {
		what = "Approved"
		if a.Option > 0 {
			what += fmt.Sprintf(": %d. %s", a.Option, core.EscapeMarkdown(a.Options[a.Option-1]))
		}
	}
	switch {
	case a.Status == Expired:
		return "⏱ No answer by the deadline: the request expired, and the action must not be taken."
	case a.Defaulted:
		return fmt.Sprintf("⏱ No answer by the deadline; the default applies. %s.", what)
	case a.Status == Approved:
		return fmt.Sprintf("✅ %s by %s after %s.", what, core.EscapeMarkdown(a.DecidedBy+core.ViaText(a.Network)), core.ClockDuration(a.DecidedAt.Sub(a.RequestedAt)))
	default:
		return fmt.Sprintf("❌ %s by %s after %s.", what, core.EscapeMarkdown(a.DecidedBy+core.ViaText(a.Network)), core.ClockDuration(a.DecidedAt.Sub(a.RequestedAt)))
	}
}

// deadlineBody tells the room what happened at the deadline.
func deadlineBody(a Approval) string {
	switch a.Status {
	case Expired:
		return fmt.Sprintf("No answer to %s's request by the deadline: it expired, and %s was told not to go ahead.",
			core.EscapeMarkdown(a.Agent), core.EscapeMarkdown(a.Agent))
	case Approved:
		return fmt.Sprintf("No answer to %s's request by the deadline, so its default applies: approved%s.",
			core.EscapeMarkdown(a.Agent), optionSuffix(a))
	default:
		return fmt.Sprintf("No answer to %s's request by the deadline, so its default applies: denied.", core.EscapeMarkdown(a.Agent))
	}
}

// afterDeadline says what happens at the deadline.
func afterDeadline(a Approval) string {
	switch a.Default {
	case "":
		return "the request expires and the action is not taken"
	case DefaultDeny:
		return "it is denied"
	case DefaultApprove:
		return "it is approved"
	}
	return fmt.Sprintf("option %d (%s) is approved", slices.Index(a.Options, a.Default)+1, core.EscapeMarkdown(a.Default))
}

func optionSuffix(a Approval) string {
	if a.Option == 0 {
		return ""
	}
	return fmt.Sprintf(" with %d. %s", a.Option, core.EscapeMarkdown(a.Options[a.Option-1]))
}

// optionsText says how a request is answered, for a refusal.
func optionsText(a Approval) string {
	if len(a.Options) == 0 {
		return "no options: approve or deny it"
	}
	return fmt.Sprintf("options 1 to %d, or deny", len(a.Options))
}

func orList(options []string) string {
	quoted := make([]string, len(options))
	for i, o := range options {
		quoted[i] = fmt.Sprintf("%q", o)
	}
	return strings.Join(quoted, " or ")
}
