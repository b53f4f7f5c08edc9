package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// CardSpec is a card an orchestrator publishes.
type CardSpec struct {
	// Ref names the card within its set, for DependsOn.
	Ref        string   `json:"ref,omitempty"`
	Goal       string   `json:"goal"`
	Acceptance []string `json:"acceptance"`
	// Priority is P0 to P3.
	Priority  string   `json:"priority,omitempty"`
	DependsOn []string `json:"depends_on,omitempty"`
	Budget    string   `json:"budget,omitempty"`
}

// Card is a backlog card as it stands.
type Card struct {
	ID         string   `json:"id"`
	SetID      string   `json:"set_id"`
	Ref        string   `json:"ref"`
	Goal       string   `json:"goal"`
	Acceptance []string `json:"acceptance"`
	Priority   string   `json:"priority"`
	DependsOn  []string `json:"depends_on"`
	State      string   `json:"state"`
	// Worker is the agent working the card.
	Worker   string `json:"worker"`
	Revision int    `json:"revision"`
}

// CardSet is a published set: each card's id by its ref.
type CardSet struct {
	SetID string `json:"set_id"`
	Cards []struct {
		Ref string `json:"ref"`
		ID  string `json:"id"`
	} `json:"cards"`
}

// PublishCardSet publishes cards at once (an orchestrator token). key
// makes it safe to retry: the same key and cards answer the first answer.
func (c *Client) PublishCardSet(ctx context.Context, key string, cards ...CardSpec) (CardSet, error) {
	var set CardSet
	return set, c.do(ctx, http.MethodPost, "/api/cardsets", idempotent(key), map[string]any{"cards": cards}, &set)
}

// Cards lists cards in state (all when empty), most urgent first.
func (c *Client) Cards(ctx context.Context, state string) ([]Card, error) {
	var out struct {
		Cards []Card `json:"cards"`
	}
	path := "/api/cards"
	if state != "" {
		path += "?state=" + url.QueryEscape(state)
	}
	return out.Cards, c.do(ctx, http.MethodGet, path, nil, nil, &out)
}

// SetCardState moves a card the agent works: claimed, in_progress,
// blocked, done.
func (c *Client) SetCardState(ctx context.Context, cardID, state, note string) (Card, error) {
	var card Card
	return card, c.do(ctx, http.MethodPost, "/api/cards/"+url.PathEscape(cardID)+"/state", nil,
		map[string]string{"state": state, "note": note}, &card)
}

// Decision is a question an agent asked the room about a card.
type Decision struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Options  []string `json:"options"`
	Status   string   `json:"status"`
	// Option is the answer, counted from 1; 0 while open.
	Option int `json:"option"`
}

// Question is what an agent asks the room about a card it works, with
// where its work stands.
type Question struct {
	Question string   `json:"question"`
	Options  []string `json:"options"`
	// Branch is where the work is pushed; Note says how far it got.
	Branch string `json:"-"`
	Note   string `json:"-"`
	// Deadline, when set, is when DefaultOption (counted from 1) applies.
	Deadline      time.Time `json:"-"`
	DefaultOption int       `json:"default_option,omitempty"`
}

// AskDecision asks the room a question about a card the agent works.
func (c *Client) AskDecision(ctx context.Context, cardID string, q Question) (Decision, error) {
	body := struct {
		Question
		Checkpoint map[string]string `json:"checkpoint"`
		Deadline   string            `json:"deadline,omitempty"`
	}{Question: q, Checkpoint: map[string]string{"branch": q.Branch, "note": q.Note}}
	if !q.Deadline.IsZero() {
		body.Deadline = q.Deadline.UTC().Format(time.RFC3339)
	}
	var d Decision
	return d, c.do(ctx, http.MethodPost, "/api/cards/"+url.PathEscape(cardID)+"/needs-decision", nil, body, &d)
}

// SignOff signs off a card's revision as the agent: approved or
// changes_requested.
func (c *Client) SignOff(ctx context.Context, cardID string, revision int, verdict, note string) error {
	return c.do(ctx, http.MethodPost, "/api/cards/"+url.PathEscape(cardID)+"/signoffs", nil,
		map[string]any{"revision": revision, "verdict": verdict, "note": note}, nil)
}

// ApprovalRequest asks before a risky action.
type ApprovalRequest struct {
	Action string `json:"action"`
	Reason string `json:"reason"`
	// Options are the answers offered; empty is approve or deny.
	Options []string `json:"options,omitempty"`
	// Approver is the Matrix user who decides; an admin may too.
	Approver string `json:"approver,omitempty"`
	// Deadline, when set, is when Default applies, or the request
	// expires.
	Deadline time.Time `json:"-"`
	Default  string    `json:"default,omitempty"`
}

// Approval is an approval request as it stands.
type Approval struct {
	ID     string `json:"id"`
	Action string `json:"action"`
	// Status is pending, approved, denied or expired; all but pending are
	// final.
	Status string `json:"status"`
	// Choice is the option chosen, when the request offered options.
	Choice    string `json:"choice"`
	Defaulted bool   `json:"defaulted"`
	DecidedBy string `json:"decided_by"`
}

// Approved reports whether the agent may go ahead.
func (a Approval) Approved() bool { return a.Status == "approved" }

// RequestApproval relays a request to the room. key makes it safe to
// retry: the same key and request answer the request as it stands.
func (c *Client) RequestApproval(ctx context.Context, key string, r ApprovalRequest) (Approval, error) {
	body := struct {
		ApprovalRequest
		Deadline string `json:"deadline,omitempty"`
	}{ApprovalRequest: r}
	if !r.Deadline.IsZero() {
		body.Deadline = r.Deadline.UTC().Format(time.RFC3339)
	}
	var a Approval
	return a, c.do(ctx, http.MethodPost, "/api/approvals", idempotent(key), body, &a)
}

// Approval reads what became of a request.
func (c *Client) Approval(ctx context.Context, id string) (Approval, error) {
	var a Approval
	return a, c.do(ctx, http.MethodGet, "/api/approvals/"+url.PathEscape(id), nil, nil, &a)
}

// WaitApproval reads the request every poll until it is decided or
// expires, or ctx ends; a rate limit is waited out.
func (c *Client) WaitApproval(ctx context.Context, id string, poll time.Duration) (Approval, error) {
	for {
		a, err := c.Approval(ctx, id)
		wait := poll
		var p *Problem
		switch {
		case errors.As(err, &p) && errors.Is(err, ErrRateLimited) && p.RetryAfter > 0:
			wait = p.RetryAfter
		case err != nil:
			return a, err
		case a.Status != "pending":
			return a, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return a, ctx.Err()
		case <-t.C:
		}
	}
}

// Amendment is a typed change to a card's spec, or the answer to a
// question about it.
type Amendment struct {
	Revision int    `json:"revision"`
	Kind     string `json:"kind"`
	Text     string `json:"text"`
	Author   string `json:"author"`
}

// CardDetail is a card with its amendments and questions.
type CardDetail struct {
	Card
	Amendments []Amendment `json:"amendments"`
	Decisions  []Decision  `json:"decisions"`
}

// Card reads a card with its amendments and questions; a worker reads the
// room's answer to its question here.
func (c *Client) Card(ctx context.Context, id string) (CardDetail, error) {
	var d CardDetail
	return d, c.do(ctx, http.MethodGet, "/api/cards/"+url.PathEscape(id), nil, nil, &d)
}

// Breach is what a supervisor saw an agent do.
type Breach struct {
	// Severity is identity, safety, boundary or infrastructure.
	Severity string   `json:"severity"`
	Reason   string   `json:"reason"`
	Evidence []string `json:"evidence,omitempty"`
	// By names the supervisor; empty is the token's role.
	By string `json:"by,omitempty"`
}

// OpenBreaker halts an agent (a supervisor token): its journal, card moves
// and questions are refused until a person reviews and resumes it. It
// returns the breaker event's id, which the person resumes.
func (c *Client) OpenBreaker(ctx context.Context, agent string, b Breach) (string, error) {
	var out struct {
		Event struct {
			ID string `json:"id"`
		} `json:"event"`
	}
	err := c.do(ctx, http.MethodPost, "/api/breaker/"+url.PathEscape(agent)+"/open", nil, b, &out)
	return out.Event.ID, err
}

// VerifyBreaker says whether a half-open agent works (a supervisor token):
// ok closes its breaker, not ok opens it again. It returns the breaker's
// state after: closed, open or half-open.
func (c *Client) VerifyBreaker(ctx context.Context, agent string, ok bool, note string) (string, error) {
	var out struct {
		State string `json:"state"`
	}
	err := c.do(ctx, http.MethodPost, "/api/breaker/"+url.PathEscape(agent)+"/verify", nil,
		map[string]any{"ok": ok, "note": note}, &out)
	return out.State, err
}

// Agent is an agent Jarvis watches. Durations are sent and read as Go
// writes them: 90s, 15m, 24h0m0s.
type Agent struct {
	Name string `json:"name,omitempty"`
	// Cadence is how often it reports (24h when empty); not with a
	// Schedule, a cron schedule ("0 3 * * *", "@daily") in TimeZone (UTC
	// when empty). Grace is how long past its expected time a report may
	// come.
	Cadence  string `json:"cadence,omitempty"`
	Grace    string `json:"grace,omitempty"`
	Schedule string `json:"schedule,omitempty"`
	TimeZone string `json:"time_zone,omitempty"`
	// DependsOn names the agents it needs to work.
	DependsOn []string `json:"depends_on,omitempty"`
	// Source is "config" for the configuration file's agents and "api"
	// for those added over the API or the CLI, with who added or last
	// changed them and when; set in answers only.
	Source  string    `json:"source,omitempty"`
	AddedBy string    `json:"added_by,omitempty"`
	AddedAt time.Time `json:"added_at,omitzero"`
}

// PutAgent adds an agent, or changes one added before (a supervisor
// token); Jarvis watches it at once. a.Name is the agent's name. An agent
// of the configuration file is refused with ErrConflict: it is changed
// there. It returns the agent as Jarvis watches it.
func (c *Client) PutAgent(ctx context.Context, a Agent) (Agent, error) {
	body := struct {
		Cadence   string   `json:"cadence,omitempty"`
		Grace     string   `json:"grace,omitempty"`
		Schedule  string   `json:"schedule,omitempty"`
		TimeZone  string   `json:"time_zone,omitempty"`
		DependsOn []string `json:"depends_on,omitempty"`
	}{a.Cadence, a.Grace, a.Schedule, a.TimeZone, a.DependsOn}
	var out Agent
	return out, c.do(ctx, http.MethodPut, "/api/agents/"+url.PathEscape(a.Name), nil, body, &out)
}

// Agents lists the agents Jarvis watches, the configuration file's first.
func (c *Client) Agents(ctx context.Context) ([]Agent, error) {
	var out struct {
		Agents []Agent `json:"agents"`
	}
	return out.Agents, c.do(ctx, http.MethodGet, "/api/agents", nil, nil, &out)
}

// RemoveAgent stops watching an agent added over the API or the CLI (a
// supervisor token); its history and tokens stay.
func (c *Client) RemoveAgent(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/agents/"+url.PathEscape(name), nil, nil, nil)
}
