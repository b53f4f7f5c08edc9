package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// IdempotencyKeyHeader carries the client's idempotency key when it
// publishes a card set.
const IdempotencyKeyHeader = "Idempotency-Key"

// RegisterCards adds the backlog routes: publishing card sets, reading
// cards, moving them through their states, amendments and questions
// (needs-decision). An orchestrator credential publishes sets and amends
// cards; an agent credential moves cards, asks questions and signs off,
// each refused with 423 while the agent's breaker is open; any credential
// reads.
func RegisterCards(s *Server, cards *card.Service, breakers BreakerStates) {
	h := &cardsAPI{cards: cards, breakers: breakers}
	s.HandleRole("POST /api/cardsets", http.HandlerFunc(h.postCardSet), credential.Orchestrator)
	s.HandleRole("GET /api/cards", http.HandlerFunc(h.listCards))
	s.HandleRole("GET /api/cards/{id}", http.HandlerFunc(h.getCard))
	s.HandleRole("POST /api/cards/{id}/state", http.HandlerFunc(h.postState), credential.Agent)
	s.HandleRole("POST /api/cards/{id}/amendments", http.HandlerFunc(h.postAmendment), credential.Orchestrator)
	s.HandleRole("POST /api/cards/{id}/needs-decision", http.HandlerFunc(h.postNeedsDecision), credential.Agent)
	s.HandleRole("POST /api/cards/{id}/signoffs", http.HandlerFunc(h.postSignOff), credential.Agent, credential.Supervisor)
}

type cardsAPI struct {
	cards    *card.Service
	breakers BreakerStates
}

// unlessHalted refuses a worker's request while its breaker is open.
func (h *cardsAPI) unlessHalted(w http.ResponseWriter, r *http.Request) bool {
	p, _ := PrincipalOf(r.Context())
	if err := checkNotHalted(r.Context(), h.breakers, p.Agent); err != nil {
		WriteError(w, r, err)
		return false
	}
	return true
}

type cardRequest struct {
	Ref        string   `json:"ref"`
	Goal       string   `json:"goal"`
	Acceptance []string `json:"acceptance"`
	Priority   string   `json:"priority"`
	DependsOn  []string `json:"depends_on"`
	Budget     string   `json:"budget"`
}

type cardSetRequest struct {
	// Author defaults to core.MainAgent.
	Author string        `json:"author"`
	Cards  []cardRequest `json:"cards"`
}

type cardSetEntry struct {
	Ref      string `json:"ref,omitempty"`
	ID       string `json:"id"`
	Priority string `json:"priority"`
	Goal     string `json:"goal"`
}

// cardSetResponse holds only what never changes after publishing, so that
// a replay returns exactly the first response.
type cardSetResponse struct {
	OK             bool           `json:"ok"`
	SetID          string         `json:"set_id"`
	IdempotencyKey string         `json:"idempotency_key"`
	Author         string         `json:"author"`
	PublishedAt    string         `json:"published_at"`
	Cards          []cardSetEntry `json:"cards"`
}

// postCardSet publishes a card set atomically. The Idempotency-Key header
// is required; a replay of the same key and body answers 200 with the first
// response and the header Idempotent-Replayed: true.
func (h *cardsAPI) postCardSet(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(IdempotencyKeyHeader)
	if strings.TrimSpace(key) == "" {
		WriteError(w, r, core.Invalid(IdempotencyKeyHeader, "header is required"))
		return
	}
	var req cardSetRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	// An agent's text is external, whoever it names as ratifier.
	in := card.SetInput{Key: key, Author: req.Author, SourceTrust: core.TrustExternal}
	if in.Author == "" {
		in.Author = card.MainAgent
	}
	for _, c := range req.Cards {
		in.Cards = append(in.Cards, card.Input{Ref: c.Ref, Spec: card.Spec{Goal: c.Goal,
			Acceptance: c.Acceptance, Priority: card.Priority(c.Priority), DependsOn: c.DependsOn, Budget: c.Budget}})
	}
	set, err := h.cards.Publish(r.Context(), in)
	if err != nil {
		writeCardError(w, r, err)
		return
	}
	resp := cardSetResponse{OK: true, SetID: set.ID, IdempotencyKey: set.Key, Author: set.Author,
		PublishedAt: apiTime(set.PublishedAt), Cards: make([]cardSetEntry, len(set.Cards))}
	for i, c := range set.Cards {
		resp.Cards[i] = cardSetEntry{Ref: c.Ref, ID: c.ID, Priority: string(c.Spec.Priority), Goal: c.Spec.Goal}
	}
	if set.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	WriteJSON(w, http.StatusOK, resp)
}

// writeCardError answers a refused card request. A priority budget refusal
// (402) also names the class and, in Retry-After and retry_at, when room
// returns.
func writeCardError(w http.ResponseWriter, r *http.Request, err error) {
	var be *card.BudgetError
	if errors.As(err, &be) && !be.RetryAt.IsZero() {
		wait := be.RetryAt.Sub(be.At)
		w.Header().Set("Retry-After", strconv.Itoa(max(int((wait+time.Second-1)/time.Second), 1)))
	}
	if be != nil {
		err = budgetProblem{err: err, be: be}
	}
	WriteError(w, r, err)
}

// budgetProblem adds the class and when room returns to a budget
// refusal's problem details.
type budgetProblem struct {
	err error
	be  *card.BudgetError
}

func (p budgetProblem) Error() string { return p.err.Error() }
func (p budgetProblem) Unwrap() error { return p.err }

// ProblemMembers names the priority class, the key of its budget and when
// it has room again.
func (p budgetProblem) ProblemMembers() map[string]any {
	return map[string]any{"priority": string(p.be.Priority), "retry_at": optionalTime(p.be.RetryAt),
		"limit_key": "cards.budget." + string(p.be.Priority) + ".count"}
}

type cardJSON struct {
	ID               string   `json:"id"`
	SetID            string   `json:"set_id"`
	Ref              string   `json:"ref,omitempty"`
	Goal             string   `json:"goal"`
	Acceptance       []string `json:"acceptance"`
	Priority         string   `json:"priority"`
	SpecPriority     string   `json:"spec_priority"`
	DependsOn        []string `json:"depends_on"`
	Budget           string   `json:"budget,omitempty"`
	Author           string   `json:"author"`
	RatifiedBy       string   `json:"ratified_by,omitempty"`
	RatifiedRevision int      `json:"ratified_revision,omitempty"`
	// SourceTrust is where the card's text came from (core.Trust).
	SourceTrust string `json:"source_trust"`
	State       string `json:"state"`
	StateNote   string `json:"state_note,omitempty"`
	// Worker is the agent working the card, if one claimed it.
	Worker    string `json:"worker,omitempty"`
	Revision  int    `json:"revision"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func toCardJSON(c card.Card) cardJSON {
	return cardJSON{ID: c.ID, SetID: c.SetID, Ref: c.Ref, Goal: c.Spec.Goal, Acceptance: nonNilStrings(c.Spec.Acceptance),
		Priority: string(c.Priority), SpecPriority: string(c.Spec.Priority), DependsOn: nonNilStrings(c.Spec.DependsOn),
		Budget: c.Spec.Budget, Author: c.Author, RatifiedBy: c.RatifiedBy, RatifiedRevision: c.RatifiedRevision,
		SourceTrust: string(c.SourceTrust), State: string(c.State), StateNote: c.StateNote, Worker: c.Worker, Revision: c.Revision, CreatedAt: apiTime(c.CreatedAt),
		UpdatedAt: apiTime(c.UpdatedAt)}
}

type amendmentJSON struct {
	Revision       int      `json:"revision"`
	Kind           string   `json:"kind"`
	Text           string   `json:"text"`
	Priority       string   `json:"priority,omitempty"`
	Acceptance     []string `json:"acceptance,omitempty"`
	DecisionID     string   `json:"decision_id,omitempty"`
	Option         int      `json:"option,omitempty"`
	ElapsedSeconds int64    `json:"elapsed_seconds,omitempty"`
	Author         string   `json:"author"`
	Network        string   `json:"network,omitempty"`
	SourceTrust    string   `json:"source_trust"`
	CreatedAt      string   `json:"created_at"`
}

func toAmendmentJSON(a card.Amendment) amendmentJSON {
	return amendmentJSON{Revision: a.Revision, Kind: string(a.Kind), Text: a.Text, Priority: string(a.Priority),
		Acceptance: a.Acceptance, DecisionID: a.DecisionID, Option: a.Option, ElapsedSeconds: int64(a.Elapsed.Seconds()),
		Author: a.Author, Network: a.Network, SourceTrust: string(a.SourceTrust), CreatedAt: apiTime(a.CreatedAt)}
}

type signOffJSON struct {
	Reviewer       string `json:"reviewer"`
	SignedRevision int    `json:"signed_revision"`
	Verdict        string `json:"verdict"`
	Note           string `json:"note,omitempty"`
	// Current is false once the card was amended after the sign-off.
	Current  bool   `json:"current"`
	SignedAt string `json:"signed_at"`
}

func toSignOffJSON(s card.SignOff, c card.Card) signOffJSON {
	return signOffJSON{Reviewer: s.Reviewer, SignedRevision: s.Revision, Verdict: string(s.Verdict), Note: s.Note,
		Current: !s.Stale(c), SignedAt: apiTime(s.At)}
}

type checkpointJSON struct {
	Branch string `json:"branch"`
	Note   string `json:"note"`
}

type decisionJSON struct {
	ID            string         `json:"id"`
	CardID        string         `json:"card_id"`
	Question      string         `json:"question"`
	Options       []string       `json:"options"`
	Checkpoint    checkpointJSON `json:"checkpoint"`
	Deadline      *string        `json:"deadline"`
	DefaultOption int            `json:"default_option,omitempty"`
	Asked         []string       `json:"asked"`
	Status        string         `json:"status"`
	Option        int            `json:"option,omitempty"`
	AnsweredBy    string         `json:"answered_by,omitempty"`
	Network       string         `json:"network,omitempty"`
	AskedAt       string         `json:"asked_at"`
	ClosedAt      *string        `json:"closed_at"`
	// NoticeKey is the key of the relay message in the room.
	NoticeKey string `json:"notice_key"`
}

func toDecisionJSON(d card.Decision) decisionJSON {
	return decisionJSON{ID: d.ID, CardID: d.CardID, Question: d.Question, Options: d.Options,
		Checkpoint: checkpointJSON(d.Checkpoint), Deadline: optionalTime(d.Deadline), DefaultOption: d.DefaultOption,
		Asked: nonNilStrings(d.Asked), Status: string(d.Status), Option: d.Option, AnsweredBy: d.AnsweredBy,
		Network: d.Network, AskedAt: apiTime(d.AskedAt), ClosedAt: optionalTime(d.ClosedAt), NoticeKey: d.NoticeKey()}
}

type cardDetailJSON struct {
	cardJSON
	Amendments []amendmentJSON `json:"amendments"`
	SignOffs   []signOffJSON   `json:"signoffs"`
	Decisions  []decisionJSON  `json:"decisions"`
}

func (h *cardsAPI) getCard(w http.ResponseWriter, r *http.Request) {
	d, err := h.cards.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	out := cardDetailJSON{cardJSON: toCardJSON(d.Card), Amendments: []amendmentJSON{}, SignOffs: []signOffJSON{},
		Decisions: []decisionJSON{}}
	for _, a := range d.Amendments {
		out.Amendments = append(out.Amendments, toAmendmentJSON(a))
	}
	for _, s := range d.SignOffs {
		out.SignOffs = append(out.SignOffs, toSignOffJSON(s, d.Card))
	}
	for _, q := range d.Decisions {
		out.Decisions = append(out.Decisions, toDecisionJSON(q))
	}
	WriteJSON(w, http.StatusOK, out)
}

// listCards answers GET /api/cards?state=…&limit=…, most urgent first.
func (h *cardsAPI) listCards(w http.ResponseWriter, r *http.Request) {
	f := card.Filter{State: card.State(r.URL.Query().Get("state"))}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			WriteError(w, r, core.Invalid("limit", "must be a positive number, not %q", l))
			return
		}
		f.Limit = n
	}
	cards, err := h.cards.List(r.Context(), f)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	out := make([]cardJSON, len(cards))
	for i, c := range cards {
		out[i] = toCardJSON(c)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"cards": out})
}

type stateRequest struct {
	State string `json:"state"`
	Note  string `json:"note"`
}

func (h *cardsAPI) postState(w http.ResponseWriter, r *http.Request) {
	var req stateRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	if req.State == "" {
		WriteError(w, r, core.Invalid("state", "is required"))
		return
	}
	if !h.unlessHalted(w, r) {
		return
	}
	p, _ := PrincipalOf(r.Context())
	card, err := h.cards.SetStateAs(r.Context(), p.Agent, r.PathValue("id"), card.State(req.State), req.Note)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, toCardJSON(card))
}

type amendmentRequest struct {
	Kind       string   `json:"kind"`
	Text       string   `json:"text"`
	Priority   string   `json:"priority"`
	Acceptance []string `json:"acceptance"`
	// Author defaults to core.MainAgent.
	Author       string `json:"author"`
	BaseRevision int    `json:"base_revision"`
}

func (h *cardsAPI) postAmendment(w http.ResponseWriter, r *http.Request) {
	var req amendmentRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	if req.Author == "" {
		req.Author = card.MainAgent
	}
	res, err := h.cards.Amend(r.Context(), r.PathValue("id"), card.AmendmentInput{Kind: card.AmendmentKind(req.Kind),
		Text: req.Text, Priority: card.Priority(req.Priority), Acceptance: req.Acceptance, Author: req.Author,
		BaseRevision: req.BaseRevision, SourceTrust: core.TrustExternal})
	if err != nil {
		writeCardError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, map[string]any{"ok": true, "amendment": toAmendmentJSON(res.Amendment), "card": toCardJSON(res.Card)})
}

type needsDecisionRequest struct {
	Question   string         `json:"question"`
	Options    []string       `json:"options"`
	Checkpoint checkpointJSON `json:"checkpoint"`
	// Deadline is RFC 3339; empty means none.
	Deadline      string `json:"deadline"`
	DefaultOption int    `json:"default_option"`
}

func (h *cardsAPI) postNeedsDecision(w http.ResponseWriter, r *http.Request) {
	var req needsDecisionRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	if !h.unlessHalted(w, r) {
		return
	}
	in := card.DecisionInput{Question: req.Question, Options: req.Options, Checkpoint: card.Checkpoint(req.Checkpoint),
		DefaultOption: req.DefaultOption}
	if req.Deadline != "" {
		deadline, err := parseAPITime("deadline", req.Deadline)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		in.Deadline = deadline
	}
	p, _ := PrincipalOf(r.Context())
	d, err := h.cards.RaiseDecisionAs(r.Context(), p.Agent, r.PathValue("id"), in)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, toDecisionJSON(d))
}

type signOffRequest struct {
	// Reviewer defaults to an agent token's agent; a supervisor names it.
	Reviewer string `json:"reviewer"`
	Revision int    `json:"revision"`
	Verdict  string `json:"verdict"`
	Note     string `json:"note"`
}

// postSignOff records a reviewer's sign-off, pinned to the revision
// reviewed: an agent signs as itself, a supervisor for the reviewer it
// names. A revision that is not the card's current one is 409.
func (h *cardsAPI) postSignOff(w http.ResponseWriter, r *http.Request) {
	var req signOffRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	p, _ := PrincipalOf(r.Context())
	if p.Role == credential.Agent {
		if req.Reviewer == "" {
			req.Reviewer = p.Agent
		}
		if err := actAs(r.Context(), req.Reviewer); err != nil {
			WriteError(w, r, err)
			return
		}
		if !h.unlessHalted(w, r) {
			return
		}
	}
	if req.Revision < 1 {
		WriteError(w, r, core.Invalid("revision", "is required: the spec revision you reviewed"))
		return
	}
	s, err := h.cards.SignOff(r.Context(), r.PathValue("id"), card.SignOffInput{Reviewer: req.Reviewer, Revision: req.Revision,
		Verdict: card.Verdict(req.Verdict), Note: req.Note})
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, signOffJSON{Reviewer: s.Reviewer, SignedRevision: s.Revision, Verdict: string(s.Verdict),
		Note: s.Note, Current: true, SignedAt: apiTime(s.At)})
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
