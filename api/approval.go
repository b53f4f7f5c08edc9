package api

import (
	"net/http"

	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// RegisterApprovals adds the approval routes: an agent asks before a risky
// action (refused with 423 while its breaker is open) and reads back what
// became of its request; any credential reads.
func RegisterApprovals(s *Server, approvals *approval.Service, breakers BreakerStates) {
	h := &approvalsAPI{approvals: approvals, breakers: breakers}
	s.HandleRole("POST /api/approvals", http.HandlerFunc(h.post), credential.Agent)
	s.HandleRole("GET /api/approvals/{id}", http.HandlerFunc(h.get))
}

type approvalsAPI struct {
	approvals *approval.Service
	breakers  BreakerStates
}

type approvalRequest struct {
	// Agent defaults to the token's agent; another is refused.
	Agent    string   `json:"agent"`
	Action   string   `json:"action"`
	Reason   string   `json:"reason"`
	Options  []string `json:"options"`
	Approver string   `json:"approver"`
	// Deadline is RFC 3339; empty means none.
	Deadline string `json:"deadline"`
	Default  string `json:"default"`
}

type approvalJSON struct {
	ID          string   `json:"id"`
	Agent       string   `json:"agent"`
	Action      string   `json:"action"`
	Reason      string   `json:"reason"`
	Options     []string `json:"options"`
	Approver    string   `json:"approver,omitempty"`
	Asked       []string `json:"asked"`
	Deadline    *string  `json:"deadline"`
	Default     string   `json:"default,omitempty"`
	Status      string   `json:"status"`
	Option      int      `json:"option,omitempty"`
	Choice      string   `json:"choice,omitempty"`
	Defaulted   bool     `json:"defaulted"`
	DecidedBy   string   `json:"decided_by,omitempty"`
	Network     string   `json:"network,omitempty"`
	RequestedAt string   `json:"requested_at"`
	DecidedAt   *string  `json:"decided_at"`
}

func toApprovalJSON(a approval.Approval) approvalJSON {
	out := approvalJSON{ID: a.ID, Agent: a.Agent, Action: a.Action, Reason: a.Reason, Options: nonNilStrings(a.Options),
		Approver: a.Approver, Asked: nonNilStrings(a.Asked), Deadline: optionalTime(a.Deadline), Default: a.Default,
		Status: string(a.Status), Option: a.Option, Defaulted: a.Defaulted, DecidedBy: a.DecidedBy, Network: a.Network,
		RequestedAt: apiTime(a.RequestedAt), DecidedAt: optionalTime(a.DecidedAt)}
	if a.Option > 0 {
		out.Choice = a.Options[a.Option-1]
	}
	return out
}

// post records a request. The Idempotency-Key header is required; a replay
// of the same key and request answers 200 with the request as it stands
// and the header Idempotent-Replayed: true, a new request 201.
func (h *approvalsAPI) post(w http.ResponseWriter, r *http.Request) {
	var req approvalRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	p, _ := PrincipalOf(r.Context())
	if req.Agent == "" {
		req.Agent = p.Agent
	}
	if err := actAs(r.Context(), req.Agent); err != nil {
		WriteError(w, r, err)
		return
	}
	if err := checkNotHalted(r.Context(), h.breakers, p.Agent); err != nil {
		WriteError(w, r, err)
		return
	}
	in := approval.Input{Key: r.Header.Get(IdempotencyKeyHeader), Agent: p.Agent, Action: req.Action, Reason: req.Reason,
		Options: req.Options, Approver: req.Approver, Default: req.Default}
	if req.Deadline != "" {
		deadline, err := parseAPITime("deadline", req.Deadline)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		in.Deadline = deadline
	}
	a, replayed, err := h.approvals.Request(r.Context(), in)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	status := http.StatusCreated
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		status = http.StatusOK
	}
	WriteJSON(w, status, toApprovalJSON(a))
}

func (h *approvalsAPI) get(w http.ResponseWriter, r *http.Request) {
	a, err := h.approvals.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, toApprovalJSON(a))
}
