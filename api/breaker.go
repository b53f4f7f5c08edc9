package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// DefaultBreakerEvents is how many events GET /api/breaker/{agent}/events
// lists without a limit.
const DefaultBreakerEvents = 20

// RegisterBreaker adds the circuit breaker routes. The agent's turn loop
// reads its breaker with any credential; only a supervisor credential opens
// it, reports observations and verifies half-open trials, so that no agent
// can close its own breaker. names, when not nil, gives an agent's name as
// the fleet spells it, so that a breaker opened for "eve" holds the agent
// configured as EVE.
func RegisterBreaker(s *Server, svc *breaker.Service, names AgentNames) {
	h := &breakerAPI{svc: svc, names: names}
	s.HandleRole("GET /api/breaker/{agent}", http.HandlerFunc(h.getStatus))
	s.HandleRole("POST /api/breaker/{agent}/open", http.HandlerFunc(h.postOpen), credential.Supervisor)
	s.HandleRole("POST /api/breaker/{agent}/observations", http.HandlerFunc(h.postObservation), credential.Supervisor)
	s.HandleRole("POST /api/breaker/{agent}/verify", http.HandlerFunc(h.postVerify), credential.Supervisor)
	s.HandleRole("GET /api/breaker/{agent}/events", http.HandlerFunc(h.getEvents))
}

type breakerAPI struct {
	svc   *breaker.Service
	names AgentNames
}

// AgentNames gives the configured spelling of an agent's name, or the name
// as given when no agent is configured so.
type AgentNames func(name string) string

// agent is the request's {agent}, spelled as the fleet spells it.
func (h *breakerAPI) agent(r *http.Request) string {
	if h.names == nil {
		return r.PathValue("agent")
	}
	return h.names(r.PathValue("agent"))
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
	// By names the supervisor; "supervisor" when left out.
	By string `json:"by"`
}

func (q breakerOpenRequest) input() breaker.OpenInput {
	return breaker.OpenInput{Severity: q.Severity, Reason: q.Reason, Evidence: q.Evidence, By: q.By}
}

// postOpen halts the agent: 201 with the event, 409 when already open.
func (h *breakerAPI) postOpen(w http.ResponseWriter, r *http.Request) {
	var req breakerOpenRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	ev, err := h.svc.Open(r.Context(), h.agent(r), req.input())
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
	agent := h.agent(r)
	ev, opened, err := h.svc.Observe(r.Context(), agent, breaker.Observation{Urgency: req.Urgency, OpenInput: req.input()})
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
	st, err := h.svc.Verify(r.Context(), h.agent(r), *req.OK, req.Note, req.By)
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
