package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// RegisterAgents adds the routes that add, change, list and remove agents
// without an edit of the configuration file: a supervisor credential adds
// and removes them, any credential lists them. The configuration file's
// agents are listed too, and are changed only there.
func RegisterAgents(s *Server, fleet *fleet.Service) {
	h := &agentsAPI{fleet: fleet}
	s.HandleRole("GET /api/agents", http.HandlerFunc(h.list))
	s.HandleRole("PUT /api/agents/{name}", http.HandlerFunc(h.put), credential.Supervisor)
	s.HandleRole("DELETE /api/agents/{name}", http.HandlerFunc(h.remove), credential.Supervisor)
}

type agentsAPI struct {
	fleet *fleet.Service
}

// agentRequest is an agent's watch: a cadence, or a cron schedule in a
// time zone, a grace, and the agents it depends on. Durations are written
// as 90s, 15m or 24h.
type agentRequest struct {
	Cadence   string   `json:"cadence"`
	Grace     string   `json:"grace"`
	Schedule  string   `json:"schedule"`
	TimeZone  string   `json:"time_zone"`
	DependsOn []string `json:"depends_on"`
}

// agentJSON is an agent as Jarvis watches it.
type agentJSON struct {
	Name      string   `json:"name"`
	Cadence   string   `json:"cadence"`
	Grace     string   `json:"grace"`
	Schedule  string   `json:"schedule,omitempty"`
	TimeZone  string   `json:"time_zone,omitempty"`
	DependsOn []string `json:"depends_on"`
	// Source is "config" for the configuration file's agents, "api" for
	// those added over the API or the CLI.
	Source  string  `json:"source"`
	AddedBy string  `json:"added_by,omitempty"`
	AddedAt *string `json:"added_at,omitempty"`
}

func (h *agentsAPI) list(w http.ResponseWriter, r *http.Request) {
	out := []agentJSON{}
	for _, a := range h.fleet.Agents() {
		out = append(out, h.agentJSON(a))
	}
	WriteJSON(w, http.StatusOK, map[string]any{"agents": out})
}

// agentJSON is a as Jarvis watches it, with who added it when it was
// added.
func (h *agentsAPI) agentJSON(a fleet.AgentConfig) agentJSON {
	j := agentJSON{Name: a.Name, Cadence: a.Cadence.String(), Grace: a.Grace.String(), Schedule: a.Schedule, TimeZone: a.TimeZone,
		DependsOn: append([]string{}, a.DependsOn...), Source: "config"}
	for _, ad := range h.fleet.AddedAgents() {
		if ad.Name == a.Name {
			j.Source, j.AddedBy, j.AddedAt = "api", ad.By, optionalTime(ad.At)
		}
	}
	return j
}

func (h *agentsAPI) put(w http.ResponseWriter, r *http.Request) {
	var req agentRequest
	if err := DecodeOptionalJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	a := fleet.AddedAgent{Name: r.PathValue("name"), Schedule: req.Schedule, TimeZone: req.TimeZone, DependsOn: req.DependsOn}
	var bad FieldErrors
	a.Cadence = optionalDuration(&bad, "cadence", req.Cadence)
	a.Grace = optionalDuration(&bad, "grace", req.Grace)
	if len(bad) > 0 {
		WriteError(w, r, bad)
		return
	}
	p, _ := PrincipalOf(r.Context())
	a.By = string(p.Role) + " " + p.ID
	created, err := h.fleet.PutAgent(r.Context(), a)
	if errors.Is(err, core.ErrRateLimited) {
		err = limitProblem{err: err, key: "fleet.max_added_agents"}
	}
	if err != nil {
		WriteError(w, r, err)
		return
	}
	got, err := h.fleet.LookupAgent("name", a.Name)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	WriteJSON(w, code, h.agentJSON(got))
}

func (h *agentsAPI) remove(w http.ResponseWriter, r *http.Request) {
	if err := h.fleet.RemoveAgent(r.Context(), r.PathValue("name")); err != nil {
		WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// optionalDuration reads a duration such as 90s, 15m or 24h (empty is 0),
// adding to bad what is wrong with it.
func optionalDuration(bad *FieldErrors, field, value string) time.Duration {
	if value == "" {
		return 0
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		*bad = append(*bad, &core.FieldError{Field: field, Reason: fmt.Sprintf("must be a duration such as 90s, 15m or 24h, not %q", value)})
	}
	return d
}

// limitProblem names the configuration key of the limit a refusal reached.
type limitProblem struct {
	err error
	key string
}

func (p limitProblem) Error() string { return p.err.Error() }
func (p limitProblem) Unwrap() error { return p.err }

// ProblemMembers names the limit's key.
func (p limitProblem) ProblemMembers() map[string]any { return map[string]any{"limit_key": p.key} }
