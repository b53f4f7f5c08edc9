package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// RegisterTripwires adds the personal tripwire routes. A citizen
// authenticates with their personal token (Authorization: Bearer jtw_…),
// which decides the scope every read and write is confined to; the agent
// token is not accepted here.
func RegisterTripwires(s *Server, svc *tripwire.Service) {
	h := &tripwireAPI{svc: svc}
	for pattern, fn := range map[string]citizenHandler{
		"POST /api/tripwires":                h.post,
		"POST /api/tripwires/backtest":       h.backtest,
		"GET /api/tripwires":                 h.list,
		"GET /api/tripwires/journal":         h.journal,
		"GET /api/tripwires/templates":       h.templates,
		"POST /api/tripwires/templates/{id}": h.armTemplate,
		"GET /api/tripwires/{id}":            h.get,
		"PATCH /api/tripwires/{id}":          h.patch,
		"DELETE /api/tripwires/{id}":         h.delete,
		"GET /api/tripwires/{id}/history":    h.history,
		"GET /api/tripwires/{id}/skips":      h.skips,
	} {
		s.Handle(pattern, h.authenticate(fn))
	}
	s.LimitBearers(func(ctx context.Context, token string) (string, bool) {
		scope, err := svc.CitizenForToken(ctx, token)
		return personalBucket + scope, err == nil
	})
}

// personalBucket starts the rate-limit bucket of a person's personal
// tokens; the person's scope follows it.
const personalBucket = "personal:"

// citizenHandler serves a request for the citizen whose token it carries.
type citizenHandler func(w http.ResponseWriter, r *http.Request, scope string)

type tripwireAPI struct {
	svc *tripwire.Service
}

// authenticate resolves the bearer token to the citizen's scope: the one
// the rate limiter found for it, else by looking the token up.
func (h *tripwireAPI) authenticate(next citizenHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			tripwireUnauthorized(w, r, core.ErrUnauthorized)
			return
		}
		bucket, _ := limitedBearer(r)
		scope, ok := strings.CutPrefix(bucket, personalBucket)
		if !ok {
			var err error
			if scope, err = h.svc.CitizenForToken(r.Context(), token); err != nil {
				tripwireUnauthorized(w, r, err)
				return
			}
		}
		log := zerolog.Ctx(r.Context()).With().Str("citizen", scope).Logger()
		next(w, r.WithContext(log.WithContext(r.Context())), scope)
	})
}

func tripwireUnauthorized(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, core.ErrUnauthorized) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="jarvis tripwires"`)
	}
	WriteError(w, r, err)
}

func (h *tripwireAPI) post(w http.ResponseWriter, r *http.Request, scope string) {
	var draft tripwire.Draft
	if err := DecodeJSON(w, r, &draft); err != nil {
		WriteError(w, r, err)
		return
	}
	// What arrives over HTTP is an outside payload, whatever it claims.
	draft.SourceTrust = core.TrustExternal
	def, err := h.svc.Arm(r.Context(), scope, draft)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, def)
}

// backtestReply is what POST /api/tripwires/backtest answers: what the
// tripwire in the body would have done over the last span_seconds of its
// sources' history, each trip ignoring the cooldown, and the trips its
// cooldown would have let through (the messages, with push on).
type backtestReply struct {
	SpanSeconds     int64       `json:"span_seconds"`
	CooldownSeconds int64       `json:"cooldown_seconds"`
	From            *time.Time  `json:"from"`
	To              *time.Time  `json:"to"`
	Readings        int         `json:"readings"`
	Trips           []time.Time `json:"trips"`
	CooledTrips     []time.Time `json:"cooled_trips"`
	QuarantinedAt   *time.Time  `json:"quarantined_at"`
}

func (h *tripwireAPI) backtest(w http.ResponseWriter, r *http.Request, scope string) {
	var draft tripwire.Draft
	if err := DecodeJSON(w, r, &draft); err != nil {
		WriteError(w, r, err)
		return
	}
	bt, err := h.svc.BacktestDraft(r.Context(), scope, draft, tripwire.BacktestSpan)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	orNil := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	WriteJSON(w, http.StatusOK, backtestReply{
		SpanSeconds: int64(bt.Span / time.Second), CooldownSeconds: int64(bt.Cooldown / time.Second),
		From: orNil(bt.Plain.From), To: orNil(bt.Plain.To), Readings: bt.Plain.Passes,
		Trips: append([]time.Time{}, bt.Plain.Trips...), CooledTrips: append([]time.Time{}, bt.Cooled.Trips...),
		QuarantinedAt: orNil(bt.Cooled.QuarantinedAt),
	})
}

func (h *tripwireAPI) list(w http.ResponseWriter, r *http.Request, scope string) {
	defs, err := h.svc.List(r.Context(), scope)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if defs == nil {
		defs = []tripwire.Definition{}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"tripwires": defs})
}

func (h *tripwireAPI) get(w http.ResponseWriter, r *http.Request, scope string) {
	def, err := h.svc.Get(r.Context(), scope, r.PathValue("id"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, def)
}

func (h *tripwireAPI) patch(w http.ResponseWriter, r *http.Request, scope string) {
	// Source and condition are named so that a change to them is refused
	// rather than ignored as an unknown field would be.
	var req struct {
		tripwire.Patch
		Source    json.RawMessage `json:"source"`
		Condition json.RawMessage `json:"condition"`
	}
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	for field, v := range map[string]json.RawMessage{"source": req.Source, "condition": req.Condition} {
		if v != nil {
			WriteError(w, r, core.Invalid(field, "cannot change: arm a new tripwire instead, so that history describes one rule"))
			return
		}
	}
	p := req.Patch
	p.RationaleTrust = core.TrustExternal
	def, err := h.svc.Update(r.Context(), scope, r.PathValue("id"), p)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, def)
}

func (h *tripwireAPI) delete(w http.ResponseWriter, r *http.Request, scope string) {
	if err := h.svc.Delete(r.Context(), scope, r.PathValue("id")); err != nil {
		WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *tripwireAPI) history(w http.ResponseWriter, r *http.Request, scope string) {
	limit, err := tripwireQueryInt(r, "limit", 0)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	events, err := h.svc.History(r.Context(), scope, r.PathValue("id"), limit)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if events == nil {
		events = []tripwire.TripEvent{}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"events": events})
}

// skips serves a tripwire's skip log: the evaluations skipped since
// ?since= (midnight UTC today when left out), counted by reason, and the
// latest of them.
func (h *tripwireAPI) skips(w http.ResponseWriter, r *http.Request, scope string) {
	limit, err := tripwireQueryInt(r, "limit", 0)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		if since, err = time.Parse(time.RFC3339, v); err != nil {
			WriteError(w, r, core.Invalid("since", "must be a time like 2026-04-17T00:00:00Z"))
			return
		}
	}
	sum, err := h.svc.Skips(r.Context(), scope, r.PathValue("id"), since, limit)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, sum)
}

// journal serves the journal, or with ?consume=push drains the push queue
// (at most once: what is returned is gone).
func (h *tripwireAPI) journal(w http.ResponseWriter, r *http.Request, scope string) {
	q := r.URL.Query()
	switch q.Get("consume") {
	case "":
	case "push":
		events, err := h.svc.ConsumePush(r.Context(), scope)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		if events == nil {
			events = []tripwire.TripEvent{}
		}
		WriteJSON(w, http.StatusOK, map[string]any{"events": events})
		return
	default:
		WriteError(w, r, core.Invalid("consume", "only push can be consumed"))
		return
	}
	limit, err := tripwireQueryInt(r, "limit", 0)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	unread, err := tripwireQueryBool(r, "unread")
	if err != nil {
		WriteError(w, r, err)
		return
	}
	markRead, err := tripwireQueryBool(r, "mark_read")
	if err != nil {
		WriteError(w, r, err)
		return
	}
	page, err := h.svc.Journal(r.Context(), scope, tripwire.JournalQuery{Limit: limit, UnreadOnly: unread, MarkRead: markRead})
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, page)
}

func (h *tripwireAPI) templates(w http.ResponseWriter, r *http.Request, _ string) {
	templates := h.svc.Templates()
	if templates == nil {
		templates = []tripwire.Template{}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"templates": templates})
}

type tripwireTemplateRequest struct {
	Param string `json:"param"`
}

func (h *tripwireAPI) armTemplate(w http.ResponseWriter, r *http.Request, scope string) {
	var req tripwireTemplateRequest
	if r.ContentLength != 0 {
		if err := DecodeJSON(w, r, &req); err != nil {
			WriteError(w, r, err)
			return
		}
	}
	def, err := h.svc.ArmTemplate(r.Context(), scope, r.PathValue("id"), req.Param)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, def)
}

// tripwireQueryInt reads an optional non-negative integer query parameter.
func tripwireQueryInt(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, core.Invalid(name, "must be a non-negative integer, not %q", v)
	}
	return n, nil
}

// tripwireQueryBool reads an optional boolean query parameter ("1", "true", …).
func tripwireQueryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, core.Invalid(name, "must be true or false, not %q", v)
	}
	return b, nil
}
