// Package client is how a Go agent reports to Jarvis, with the standard
// library only.
//
// An agent holds one token (jarvis token issue --role agent --agent NAME),
// which names the agent, so the smallest report is
//
//	c := client.New("http://127.0.0.1:8080", os.Getenv("JARVIS_TOKEN"))
//	receipt, err := c.Heartbeat(ctx, client.Heartbeat{})
//
// Every field of a Heartbeat may be left out: the cycle is then the UTC
// date, the timestamp when Jarvis received it, mii 1 and the mode green.
// The receipt says when the next heartbeat is expected and the agent's
// breaker state; Halted reports an open breaker, which means: stop.
//
// A script or a cron job that only says "done" calls Ping, a heartbeat
// with every default. One that runs long says PingStart when it begins
// (it is late if no Ping follows within the agent's grace), and one that
// fails says PingFail, or PingExit with its exit status: the room hears of
// a failure once, until the next success.
//
// Beyond the heartbeat, an agent appends to its journal (Journal; the
// content signature is computed for it), attests to an open subject with
// a signed verdict (Attest; the signature is computed from the token),
// asks before a risky action and waits for the answer (RequestApproval,
// WaitApproval), and works backlog cards (Cards, Card, SetCardState,
// AskDecision, SignOff). An orchestrator publishes cards (PublishCardSet)
// and opens subjects to attest to (OpenSubject); a supervisor halts an
// agent (OpenBreaker), closes a half-open breaker (VerifyBreaker), and adds
// and removes the agents Jarvis watches without an edit of its
// configuration file (PutAgent, RemoveAgent; any token lists them with
// Agents).
//
// Every refusal is a *Problem, Jarvis's RFC 9457 problem details: its
// Errors name every bad field at once, RetryAfter says when to come back.
// errors.Is tells the kinds apart:
//
//	var p *client.Problem
//	switch {
//	case errors.Is(err, client.ErrBreakerOpen):
//		stop() // halted until a person resumes it
//	case errors.Is(err, client.ErrRateLimited) && errors.As(err, &p):
//		time.Sleep(p.RetryAfter)
//	case errors.As(err, &p):
//		log.Printf("refused: %v", p) // every bad field, with what was expected
//	}
//
// The API's whole contract is the OpenAPI document Jarvis serves at
// /api/openapi.json.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one Jarvis with one token. Its zero value is not usable;
// make one with New.
type Client struct {
	base  string
	token string
	// HTTP sends the requests; New sets a client with a 30 s timeout.
	HTTP *http.Client
	// Agent is the agent's name as Jarvis knows it, which an attestation's
	// signature covers; only Attest needs it.
	Agent string
}

// New returns a client of the Jarvis at base (its API's address, such as
// http://127.0.0.1:8080) for token.
func New(base, token string) *Client {
	return &Client{base: strings.TrimRight(base, "/"), token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// do sends a request with body (JSON, none when nil) and decodes a 2xx
// answer into out (when not nil); any other answer is a *Problem.
func (c *Client) do(ctx context.Context, method, path string, header http.Header, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json, application/problem+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return problemOf(resp, data)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not what this client expects: %w", method, path, err)
	}
	return nil
}

// idempotent is a header with the Idempotency-Key key.
func idempotent(key string) http.Header { return http.Header{"Idempotency-Key": {key}} }

// Heartbeat is what an agent reports; every field may be left out.
type Heartbeat struct {
	// Cycle is the agent's work cycle ("C-284"); Jarvis takes the UTC
	// date when it is empty. A second heartbeat for a cycle replaces the
	// first.
	Cycle string `json:"cycle,omitempty"`
	// Timestamp is when it was sent; Jarvis takes when it received it
	// when it is zero.
	Timestamp time.Time `json:"-"`
	// MII is the agent's integrity index, from 0 to 1; nil is 1.
	MII *float64 `json:"mii,omitempty"`
	// Mode is green, yellow or red; empty is green.
	Mode  string `json:"mode_self_report,omitempty"`
	Notes string `json:"notes,omitempty"`
	// Spend is what the agent spent since its last heartbeat.
	Spend *Spend `json:"spend,omitempty"`
	// BootID names the agent's process: a new one is a restart, and
	// restarts in a row are a crash loop.
	BootID string `json:"boot_id,omitempty"`
}

// Spend is what an agent spent: tokens, and money in an ISO 4217
// currency.
type Spend struct {
	TokensIn  int64   `json:"tokens_in,omitempty"`
	TokensOut int64   `json:"tokens_out,omitempty"`
	Cost      float64 `json:"cost,omitempty"`
	Currency  string  `json:"currency,omitempty"`
}

// HeartbeatReceipt is Jarvis's answer to a heartbeat.
type HeartbeatReceipt struct {
	ReceivedAt     time.Time `json:"received_at"`
	NextExpectedBy time.Time `json:"next_expected_by"`
	// BreakerState is closed, open (halted: do not run) or half-open.
	BreakerState string `json:"breaker_state"`
	// Instruction is "halted: stop your turn" while the breaker is open,
	// and empty otherwise.
	Instruction string `json:"instruction"`
	// Cards are the cards the agent works: one a person cancelled shows
	// "cancelled", one they amended a new revision.
	Cards []WorkCard `json:"cards"`
}

// WorkCard is a card the agent works, as a heartbeat answer lists it.
type WorkCard struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Revision int    `json:"revision"`
}

// Halted reports whether the agent's breaker is open: it must stop until
// a person resumes it.
func (r HeartbeatReceipt) Halted() bool { return r.BreakerState == "open" }

// Heartbeat reports that the agent is alive.
func (c *Client) Heartbeat(ctx context.Context, hb Heartbeat) (HeartbeatReceipt, error) {
	body := struct {
		Heartbeat
		Timestamp string `json:"timestamp,omitempty"`
	}{Heartbeat: hb}
	if !hb.Timestamp.IsZero() {
		body.Timestamp = hb.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	var r HeartbeatReceipt
	return r, c.do(ctx, http.MethodPost, "/api/agents/heartbeat", nil, body, &r)
}

// Ping is the smallest heartbeat: every field takes its default. A job
// calls it when it has done its work.
func (c *Client) Ping(ctx context.Context) (HeartbeatReceipt, error) {
	var r HeartbeatReceipt
	return r, c.do(ctx, http.MethodPost, "/api/ping", nil, nil, &r)
}

// PingStart says a job began: Jarvis expects its success (Ping) within
// the agent's grace, and shows the agent late after that.
func (c *Client) PingStart(ctx context.Context) (HeartbeatReceipt, error) {
	var r HeartbeatReceipt
	return r, c.do(ctx, http.MethodPost, "/api/ping/start", nil, nil, &r)
}

// PingFail says a job failed. The room is told once; further failures
// are not posted until a success (Ping) resolves the alert.
func (c *Client) PingFail(ctx context.Context) (HeartbeatReceipt, error) {
	var r HeartbeatReceipt
	return r, c.do(ctx, http.MethodPost, "/api/ping/fail", nil, nil, &r)
}

// PingExit reports how a job ended, by its exit status from 0 to 255: 0
// is a success, as Ping, anything else a failure, as PingFail, with the
// status named in the room.
func (c *Client) PingExit(ctx context.Context, status int) (HeartbeatReceipt, error) {
	var r HeartbeatReceipt
	return r, c.do(ctx, http.MethodPost, "/api/ping/"+strconv.Itoa(status), nil, nil, &r)
}

// JournalEntry is one entry of an agent's journal.
type JournalEntry struct {
	Cycle   string `json:"cycle"`
	EntryID string `json:"entry_id"`
	Title   string `json:"title"`
	Content string `json:"content"`
	// SignalWeight says how much the entry matters, from 0 to 1.
	SignalWeight float64    `json:"signal_weight"`
	Evidence     []Evidence `json:"verifiable_evidence,omitempty"`
	// Timestamp is when it was written; zero is now.
	Timestamp time.Time `json:"-"`
}

// Evidence backs a journal entry: a pull request, a metric.
type Evidence struct {
	Type   string `json:"type"`
	URL    string `json:"url,omitempty"`
	Source string `json:"source,omitempty"`
	Key    string `json:"key,omitempty"`
	Value  any    `json:"value,omitempty"`
}

// Journal appends an entry to the agent's journal; the content signature
// is computed here. It is refused with ErrBreakerOpen while the agent is
// halted, and with ErrConflict for an entry id the cycle has.
func (c *Client) Journal(ctx context.Context, e JournalEntry) error {
	ts := e.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	body := struct {
		JournalEntry
		ContentSignature string `json:"content_signature"`
		Timestamp        string `json:"timestamp"`
	}{e, ContentSignature(e.Content), ts.UTC().Format(time.RFC3339Nano)}
	return c.do(ctx, http.MethodPost, "/api/agents/journal", nil, body, nil)
}

// Attestation is an agent's signed verdict on an open subject.
type Attestation struct {
	SubjectID string
	// Verdict is pass, flag or reject.
	Verdict   string
	Rationale string
	// Posture is confident, cautionary, stressed or degraded, for an agent
	// whose rules ask for it; empty otherwise.
	Posture string
	// Timestamp is the time the signature covers; zero is now. Jarvis
	// takes it within five minutes of its clock.
	Timestamp time.Time
}

// Subject is something agents attest to, opened by an orchestrator.
type Subject struct {
	ID       string    `json:"subject_id"`
	Hash     string    `json:"subject_hash"`
	Title    string    `json:"title"`
	Agents   []string  `json:"agents"`
	OpenedAt time.Time `json:"opened_at"`
	ClosesAt time.Time `json:"closes_at"`
}

// Subject reads an open subject.
func (c *Client) Subject(ctx context.Context, id string) (Subject, error) {
	var s Subject
	return s, c.do(ctx, http.MethodGet, "/api/attestations/subjects/"+url.PathEscape(id), nil, nil, &s)
}

// Attest signs and sends an attestation. The signature covers the
// subject's hash, which Attest reads from Jarvis, and the agent's name,
// which c.Agent must hold.
func (c *Client) Attest(ctx context.Context, a Attestation) error {
	if c.Agent == "" {
		return errors.New("client: set Client.Agent to the agent's name before attesting: the signature covers it")
	}
	s, err := c.Subject(ctx, a.SubjectID)
	if err != nil {
		return err
	}
	ts := a.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	stamp := ts.UTC().Format(time.RFC3339)
	body := map[string]any{"subject_id": a.SubjectID, "agent": c.Agent, "verdict": a.Verdict, "rationale": a.Rationale,
		"timestamp": stamp, "signature": Sign(c.token, c.Agent, a.SubjectID, s.Hash, a.Verdict, stamp, a.Rationale)}
	if a.Posture != "" {
		body["posture"] = a.Posture
	}
	return c.do(ctx, http.MethodPost, "/api/attestations", nil, body, nil)
}

// OpenSubject opens a subject for agents to attest to (an orchestrator
// or supervisor token); opening one that is open already is no error.
func (c *Client) OpenSubject(ctx context.Context, s Subject) error {
	return c.do(ctx, http.MethodPost, "/api/attestations/subjects", nil, map[string]any{"subject_id": s.ID,
		"subject_hash": s.Hash, "title": s.Title, "agents": s.Agents}, nil)
}
