package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// RegisterSilences adds the silences a script sets, lists and ends (a
// deploy's maintenance window), with a supervisor or receiver token: the
// same silences as `!silence`, set in room, whose end is told there.
// agents, when not nil, spell a target that names a configured agent as
// the fleet does.
func RegisterSilences(s *Server, svc *oncall.Service, room string, agents Agents) {
	h := &silenceAPI{svc: svc, room: room, agents: agents}
	s.HandleRole("POST /api/silences", http.HandlerFunc(h.post), credential.Supervisor, credential.Receiver)
	s.HandleRole("GET /api/silences", http.HandlerFunc(h.list), credential.Supervisor, credential.Receiver)
	s.HandleRole("DELETE /api/silences/{id}", http.HandlerFunc(h.end), credential.Supervisor, credential.Receiver)
}

type silenceAPI struct {
	svc    *oncall.Service
	room   string
	agents Agents
}

type silenceRequest struct {
	Target        string    `json:"target"`
	Reason        string    `json:"reason"`
	By            string    `json:"by"`
	EndsAt        time.Time `json:"ends_at"`
	UntilResolved bool      `json:"until_resolved"`
}

type silenceJSON struct {
	ID            int64   `json:"id"`
	Target        string  `json:"target"`
	Reason        string  `json:"reason"`
	By            string  `json:"by"`
	StartedAt     string  `json:"started_at"`
	EndsAt        string  `json:"ends_at"`
	UntilResolved bool    `json:"until_resolved"`
	EndedAt       *string `json:"ended_at"`
	HeldAlerts    int     `json:"held_alerts"`
	HeldTrips     int     `json:"held_trips"`
}

func silenceOf(s oncall.Silence) silenceJSON {
	out := silenceJSON{ID: s.ID, Target: s.Target, Reason: s.Reason, By: s.By, StartedAt: apiTime(s.StartedAt), EndsAt: apiTime(s.EndsAt),
		UntilResolved: s.UntilResolved, HeldAlerts: s.HeldAlerts, HeldTrips: s.HeldTrips}
	if !s.EndedAt.IsZero() {
		t := apiTime(s.EndedAt)
		out.EndedAt = &t
	}
	return out
}

// post sets a silence on an agent, a source, the fleet or an Alertmanager
// label (name=value), with a reason and an end; the room is told.
func (h *silenceAPI) post(w http.ResponseWriter, r *http.Request) {
	var req silenceRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	if strings.TrimSpace(req.Reason) == "" {
		WriteError(w, r, core.Invalid("reason", "say why, as the room will read it"))
		return
	}
	target := strings.TrimSpace(req.Target)
	if h.agents != nil {
		if a, err := h.agents.LookupAgent("target", target); err == nil {
			target = a.Name
		}
	}
	sil, err := h.svc.SilenceAnnounced(r.Context(), oncall.Silence{Target: target, Reason: req.Reason, By: actor(r, req.By), RoomID: h.room,
		EndsAt: req.EndsAt, UntilResolved: req.UntilResolved})
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, map[string]any{"ok": true, "silence": silenceOf(sil)})
}

// list answers the silences that hold now, the room's and people's own.
func (h *silenceAPI) list(w http.ResponseWriter, r *http.Request) {
	list, err := h.svc.Silences(r.Context())
	if err != nil {
		WriteError(w, r, err)
		return
	}
	out := []silenceJSON{}
	for _, s := range list {
		if s.Scope == "" {
			out = append(out, silenceOf(s))
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "silences": out})
}

// end ends a silence now; the room is told what it held, and the alerts
// it held that are still open are posted.
func (h *silenceAPI) end(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		WriteError(w, r, core.Invalid("id", "must be a silence's id, a whole number"))
		return
	}
	if err := h.svc.EndSilenceNow(r.Context(), id, "ended by "+core.EscapeMarkdown(actor(r, r.URL.Query().Get("by")))); err != nil {
		WriteError(w, r, err)
		return
	}
	sil, err := h.svc.SilenceByID(r.Context(), id)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "silence": silenceOf(sil)})
}
