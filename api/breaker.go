package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// DefaultBreakerEvents is how many events GET /api/breaker/{agent}/events
// lists without a limit.
const DefaultBreakerEvents = 20

// RegisterBreaker adds the circuit breaker routes. The agent's turn loop
// reads its breaker with any credential; only a supervisor credential opens
// it, reports observations and verifies half-open trials, so that no agent
// can close its own breaker. agents, when not nil, are the configured
// agents: a breaker opened for "eve" holds the agent configured as EVE, and
// a supervisor's write for an agent that is not configured is refused.
func RegisterBreaker(s *Server, svc *breaker.Service, agents Agents) {
	h := &breakerAPI{svc: svc, agents: agents}
	s.HandleRole("GET /api/breaker/{agent}", http.HandlerFunc(h.getStatus))
	s.HandleRole("POST /api/breaker/{agent}/open", http.HandlerFunc(h.postOpen), credential.Supervisor)
	s.HandleRole("POST /api/breaker/{agent}/observations", http.HandlerFunc(h.postObservation), credential.Supervisor)
	s.HandleRole("POST /api/breaker/{agent}/verify", http.HandlerFunc(h.postVerify), credential.Supervisor)
	s.HandleRole("GET /api/breaker/{agent}/events", http.HandlerFunc(h.getEvents))
}

type breakerAPI struct {
	svc    *breaker.Service
	agents Agents
}

// Agents finds a configured agent by name, without regard to case; an
// unknown name is core.ErrInvalid naming field. fleet.Service is one.
type Agents interface {
	LookupAgent(field, name string) (fleet.AgentConfig, error)
}

// agent is the request's {agent}, spelled as the fleet spells it; an
// agent that is not configured is read as given.
func (h *breakerAPI) agent(r *http.Request) string {
	name, err := h.knownAgent(r)
	if err != nil {
		return r.PathValue("agent")
	}
	return name
}

// knownAgent is the request's {agent}, spelled as the fleet spells it;
// an agent that is not configured is core.ErrInvalid.
func (h *breakerAPI) knownAgent(r *http.Request) (string, error) {
	if h.agents == nil {
		return r.PathValue("agent"), nil
	}
	a, err := h.agents.LookupAgent("agent", r.PathValue("agent"))
	return a.Name, err
}

// actor is who a supervisor's write is recorded as: the credential that
// acted, with the name the request gives (by) after it, so that the
// audit trail never rests on a name the caller chose.
func actor(r *http.Request, by string) string {
	p, _ := PrincipalOf(r.Context())
	if by = strings.TrimSpace(by); by == "" {
		return p.ID
	}
	return fmt.Sprintf("%s (%s)", p.ID, by)
}

type breakerEventJSON struct {
	ID         string                  `json:"id"`
	Agent      string                  `json:"agent_id"`
	Timestamp  string                  `json:"timestamp"`
	Severity   breaker.Severity        `json:"severity"`
	Reason     string                  `json:"reason"`
	Evidence   []string                `json:"evidence"`
	OpenedBy   string                  `json:"opened_by"`
	PreviousID string                  `json:"previous_id,omitempty"`
	ReviewedBy string                  `json:"reviewed_by,omitempty"`
	ReviewedAt *string                 `json:"reviewed_at"`
	ResolvedAt *string                 `json:"resolved_at"`
	ResolvedBy string                  `json:"resolved_by,omitempty"`
	Resolution breaker.Resolution      `json:"resolution,omitempty"`
	NextID     string                  `json:"next_id,omitempty"`
	History    []breakerTransitionJSON `json:"history,omitempty"`
}

type breakerTransitionJSON struct {
	Action breaker.Action `json:"action"`
	From   breaker.State  `json:"from"`
	To     breaker.State  `json:"to"`
	Actor  string         `json:"actor"`
	Why    string         `json:"why,omitempty"`
	At     string         `json:"at"`
}

type breakerStatusJSON struct {
	OK    bool          `json:"ok"`
	Agent string        `json:"agent"`
	State breaker.State `json:"state"`
	// Halted is true while the breaker is open: the agent must not run.
	Halted bool              `json:"halted"`
	Since  *string           `json:"since"`
	Event  *breakerEventJSON `json:"event"`
}

func breakerOptionalTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := apiTime(t)
	return &s
}

func toBreakerEventJSON(e breaker.Event) *breakerEventJSON {
	evidence := e.Evidence
	if evidence == nil {
		evidence = []string{}
	}
	return &breakerEventJSON{
		ID: e.ID, Agent: e.Agent, Timestamp: apiTime(e.At), Severity: e.Severity, Reason: e.Reason,
		Evidence: evidence, OpenedBy: e.OpenedBy, PreviousID: e.PreviousID, ReviewedBy: e.ReviewedBy,
		ReviewedAt: breakerOptionalTime(e.ReviewedAt), ResolvedAt: breakerOptionalTime(e.ResolvedAt),
		ResolvedBy: e.ResolvedBy, Resolution: e.Resolution, NextID: e.NextID,
	}
}

func toBreakerStatusJSON(st breaker.Status) breakerStatusJSON {
	out := breakerStatusJSON{OK: true, Agent: st.Agent, State: st.State, Halted: st.State == breaker.Open}
	if st.Version > 0 {
		out.Since = breakerOptionalTime(st.Since)
	}
	if st.Event != nil {
		out.Event = toBreakerEventJSON(*st.Event)
	}
	return out
}

// getStatus answers the agent's turn loop: "open" (halted) with the event,
// "half-open" with the event under trial, or "closed".
func (h *breakerAPI) getStatus(w http.ResponseWriter, r *http.Request) {
	st, err := h.svc.Status(r.Context(), h.agent(r))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, toBreakerStatusJSON(st))
}

type breakerOpenRequest struct {
	Severity breaker.Severity `json:"severity"`
	Reason   string           `json:"reason"`
	Evidence []string         `json:"evidence"`
	// By is the supervisor's own name for itself: it is recorded after
	// the credential that acted, never instead of it.
	By string `json:"by"`
}

func (q breakerOpenRequest) input(r *http.Request) breaker.OpenInput {
	return breaker.OpenInput{Severity: q.Severity, Reason: q.Reason, Evidence: q.Evidence, By: actor(r, q.By)}
}

// postOpen halts the agent: 201 with the event, 409 when already open.
func (h *breakerAPI) postOpen(w http.ResponseWriter, r *http.Request) {
	var req breakerOpenRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	agent, err := h.knownAgent(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	ev, err := h.svc.Open(r.Context(), agent, req.input(r))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, map[string]any{"ok": true, "state": breaker.Open, "event": toBreakerEventJSON(ev)})
}

type breakerObservationRequest struct {
	Urgency breaker.Urgency `json:"urgency"`
	breakerOpenRequest
}

// postObservation takes a surfacing observation: 201 with the event when
// it opened the breaker, 200 with the state when it did not.
func (h *breakerAPI) postObservation(w http.ResponseWriter, r *http.Request) {
	var req breakerObservationRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	agent, err := h.knownAgent(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	ev, opened, err := h.svc.Observe(r.Context(), agent, breaker.Observation{Urgency: req.Urgency, OpenInput: req.input(r)})
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if opened {
		WriteJSON(w, http.StatusCreated, map[string]any{"ok": true, "opened": true, "state": breaker.Open, "event": toBreakerEventJSON(ev)})
		return
	}
	st, err := h.svc.Status(r.Context(), agent)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "opened": false, "state": st.State})
}

type breakerVerifyRequest struct {
	OK   *bool  `json:"ok"`
	Note string `json:"note"`
	By   string `json:"by"`
}

// postVerify is the supervisor's verification pass over a half-open
// breaker: 200 with the new state (and the new event when it failed), 409
// when the breaker is not half-open.
func (h *breakerAPI) postVerify(w http.ResponseWriter, r *http.Request) {
	var req breakerVerifyRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	if req.OK == nil {
		WriteError(w, r, core.Invalid("ok", "is required: true closes the breaker, false opens it again"))
		return
	}
	agent, err := h.knownAgent(r)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	st, err := h.svc.Verify(r.Context(), agent, *req.OK, req.Note, actor(r, req.By))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, toBreakerStatusJSON(st))
}

// getEvents lists the agent's latest events, newest first, each with its
// audit trail; ?limit=n (1..100, default 20).
func (h *breakerAPI) getEvents(w http.ResponseWriter, r *http.Request) {
	limit := DefaultBreakerEvents
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > breaker.MaxEvents {
			WriteError(w, r, core.Invalid("limit", "must be a whole number from 1 to %d, not %q", breaker.MaxEvents, v))
			return
		}
		limit = n
	}
	agent := h.agent(r)
	evs, err := h.svc.Events(r.Context(), agent, limit)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	out := make([]*breakerEventJSON, len(evs))
	for i, e := range evs {
		out[i] = toBreakerEventJSON(e)
		history, err := h.svc.History(r.Context(), e.ID)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		for _, t := range history {
			out[i].History = append(out[i].History, breakerTransitionJSON{
				Action: t.Action, From: t.From, To: t.To, Actor: t.Actor, Why: t.Why, At: apiTime(t.At),
			})
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "agent": agent, "events": out})
}
