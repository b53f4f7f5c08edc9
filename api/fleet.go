package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// RegisterFleet adds the Agent Reporting Protocol routes: heartbeat (and
// ping, a heartbeat with every default for scripts), journal, attestations (also at the seed's /api/vault/seal/attest),
// attestation subjects and the terminal snapshot. An agent credential
// reports for its own agent only (heartbeats, journal entries,
// attestations); an orchestrator or supervisor credential opens
// attestation subjects; any credential reads. While an agent's breaker is
// open every write it makes (journal entries, attestations) is refused with
// 423 naming the breaker event, and its heartbeats and pings are taken,
// each answer saying the breaker's state and, while it is open, the
// instruction to stop, which the fleet reads once per batch of heartbeats
// (fleet.Deps.Breakers: give it the same breakers).
func RegisterFleet(s *Server, fleet *fleet.Service, breakers BreakerStates) {
	h := &fleetAPI{fleet: fleet, breakers: breakers}
	s.HandleRole("POST /api/agents/heartbeat", http.HandlerFunc(h.postHeartbeat), credential.Agent)
	s.HandleRole("POST /api/ping", http.HandlerFunc(h.postPing), credential.Agent)
	s.HandleRole("POST /api/ping/start", http.HandlerFunc(h.postPingStart), credential.Agent)
	s.HandleRole("POST /api/ping/fail", http.HandlerFunc(h.postPingFail), credential.Agent)
	s.HandleRole("POST /api/ping/{exit_status}", http.HandlerFunc(h.postPingExit), credential.Agent)
	s.HandleRole("POST /api/agents/journal", http.HandlerFunc(h.postJournal), credential.Agent)
	s.HandleRole("GET /api/agents/journal", http.HandlerFunc(h.getJournal))
	s.HandleRole("POST /api/attestations", http.HandlerFunc(h.postAttestation), credential.Agent)
	s.HandleRole("POST /api/vault/seal/attest", http.HandlerFunc(h.postAttestation), credential.Agent)
	s.HandleRole("POST /api/attestations/subjects", http.HandlerFunc(h.postSubject), credential.Orchestrator, credential.Supervisor)
	s.HandleRole("GET /api/attestations/subjects", http.HandlerFunc(h.getOpenSubjects))
	s.HandleRole("GET /api/attestations/subjects/{id}", http.HandlerFunc(h.getSubject))
	s.HandleRole("GET /api/terminal/snapshot", http.HandlerFunc(h.getSnapshot))
}

type fleetAPI struct {
	fleet    *fleet.Service
	breakers BreakerStates
}

// actAs checks that agent is a configured agent (400 naming the field when
// it is not) and that the request's credential reports for it (403), and
// returns the agent's name as configured.
func (h *fleetAPI) actAs(ctx context.Context, agent string) (string, error) {
	a, err := h.fleet.LookupAgent("agent", agent)
	if err != nil {
		return "", err
	}
	return a.Name, actAs(ctx, agent)
}

// orTokenAgent is agent, or when it is empty the agent the request's
// token reports for.
func orTokenAgent(ctx context.Context, agent string) string {
	if agent != "" {
		return agent
	}
	p, _ := PrincipalOf(ctx)
	return p.Agent
}

// apiTime formats a time the way the protocol shows it: RFC 3339 in UTC.
func apiTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// parseAPITime reads a required RFC 3339 timestamp.
func parseAPITime(field, value string) (time.Time, error) {
	if value == "" {
		return time.Time{}, core.Invalid(field, "is required")
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return time.Time{}, core.Invalid(field, "must be an RFC 3339 time such as 2026-04-17T00:00:00Z, not %q", value)
	}
	return t, nil
}

// optionalTime formats a time, or gives nil (JSON null) for the zero time.
func optionalTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := apiTime(t)
	return &s
}

// heartbeatRequest is a heartbeat; every field may be left out: the agent
// is the token's, the cycle the UTC date, the timestamp when Jarvis
// received it, mii 1 and the mode green.
type heartbeatRequest struct {
	Agent     string   `json:"agent"`
	Cycle     string   `json:"cycle"`
	Timestamp string   `json:"timestamp"`
	MII       *float64 `json:"mii"`
	Mode      string   `json:"mode_self_report"`
	Notes     string   `json:"notes"`
	// Spend is what the agent spent since its last heartbeat.
	Spend  *spendJSON `json:"spend"`
	BootID string     `json:"boot_id"`
	// signal and exitStatus are what a ping's path says.
	signal     fleet.Signal
	exitStatus *int
}

type spendJSON struct {
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Cost      float64 `json:"cost"`
	Currency  string  `json:"currency"`
}

type heartbeatResponse struct {
	OK             bool   `json:"ok"`
	ReceivedAt     string `json:"received_at"`
	NextExpectedBy string `json:"next_expected_by"`
	// BreakerState is the agent's breaker: closed, open (halted: do not
	// run) or half-open.
	BreakerState breaker.State `json:"breaker_state"`
	// Halted is true while the breaker is open; Instruction then says
	// what the agent must do, in words it cannot mistake.
	Halted      bool   `json:"halted"`
	Instruction string `json:"instruction,omitempty"`
	// Cards are the cards the agent works: a person's NO-GO or amendment
	// shows here at its next heartbeat.
	Cards []workCardJSON `json:"cards,omitempty"`
	// AttestationsAwaited are the subjects awaiting the agent's verdict.
	AttestationsAwaited []string `json:"attestations_awaited,omitempty"`
}

type workCardJSON struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Revision int    `json:"revision"`
}

// HaltInstruction is what a heartbeat or ping answer tells a halted agent.
const HaltInstruction = "halted: stop your turn"

func (h *fleetAPI) postHeartbeat(w http.ResponseWriter, r *http.Request) {
	var req heartbeatRequest
	if err := DecodeOptionalJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	h.heartbeat(w, r, req)
}

// postPing is the smallest signal, for a script or a cron job: a
// heartbeat with every default, whatever the body, answered in one line.
func (h *fleetAPI) postPing(w http.ResponseWriter, r *http.Request) {
	h.heartbeat(w, r, heartbeatRequest{})
}

// postPingStart says a job began: its success is expected within the
// agent's grace.
func (h *fleetAPI) postPingStart(w http.ResponseWriter, r *http.Request) {
	h.heartbeat(w, r, heartbeatRequest{signal: fleet.SignalStart})
}

// postPingFail says a job failed: the room hears of it once until the
// next success.
func (h *fleetAPI) postPingFail(w http.ResponseWriter, r *http.Request) {
	h.heartbeat(w, r, heartbeatRequest{signal: fleet.SignalFail})
}

// maxExitStatus is the largest exit status a process can have.
const maxExitStatus = 255

// postPingExit reports a job's exit status: 0 is a success, anything
// else a failure.
func (h *fleetAPI) postPingExit(w http.ResponseWriter, r *http.Request) {
	status, err := strconv.Atoi(r.PathValue("exit_status"))
	if err != nil || status < 0 || status > maxExitStatus {
		WriteError(w, r, core.Invalid("exit_status", "must be a whole number from 0 to %d, not %q", maxExitStatus, r.PathValue("exit_status")))
		return
	}
	if status == 0 {
		h.heartbeat(w, r, heartbeatRequest{})
		return
	}
	h.heartbeat(w, r, heartbeatRequest{signal: fleet.SignalFail, exitStatus: &status})
}

// heartbeat records req, its left-out fields taking their defaults.
func (h *fleetAPI) heartbeat(w http.ResponseWriter, r *http.Request, req heartbeatRequest) {
	req.Agent = orTokenAgent(r.Context(), req.Agent)
	var ts time.Time
	if req.Timestamp != "" {
		var err error
		if ts, err = parseAPITime("timestamp", req.Timestamp); err != nil {
			WriteError(w, r, err)
			return
		}
	}
	if req.MII == nil {
		full := 1.0
		req.MII = &full
	}
	if req.Mode == "" {
		req.Mode = "green"
	}
	if _, err := h.actAs(r.Context(), req.Agent); err != nil {
		WriteError(w, r, err)
		return
	}
	hb := fleet.Heartbeat{Agent: req.Agent, Cycle: req.Cycle, Timestamp: ts, MII: *req.MII, Mode: req.Mode, Notes: req.Notes,
		BootID: req.BootID, Signal: req.signal, ExitStatus: req.exitStatus}
	if req.Spend != nil {
		hb.Spend = (*fleet.Spend)(req.Spend)
	}
	receipt, err := h.fleet.RecordHeartbeat(r.Context(), hb)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	resp := heartbeatResponse{OK: true, ReceivedAt: apiTime(receipt.ReceivedAt), NextExpectedBy: apiTime(receipt.NextExpectedBy),
		BreakerState: breaker.State(receipt.Breaker)}
	if resp.BreakerState == "" {
		resp.BreakerState = breaker.Closed
	}
	if resp.BreakerState == breaker.Open {
		resp.Halted, resp.Instruction = true, HaltInstruction
	}
	for _, c := range receipt.Cards {
		resp.Cards = append(resp.Cards, workCardJSON(c))
	}
	resp.AttestationsAwaited = receipt.Attestations
	WriteJSON(w, http.StatusOK, resp)
}

type evidenceJSON struct {
	Type   string `json:"type"`
	URL    string `json:"url,omitempty"`
	Source string `json:"source,omitempty"`
	Key    string `json:"key,omitempty"`
	Value  any    `json:"value,omitempty"`
}

type journalRequest struct {
	Agent            string         `json:"agent"`
	Cycle            string         `json:"cycle"`
	EntryID          string         `json:"entry_id"`
	Title            string         `json:"title"`
	Content          string         `json:"content"`
	ContentSignature string         `json:"content_signature"`
	SignalWeight     *float64       `json:"signal_weight"`
	Evidence         []evidenceJSON `json:"verifiable_evidence"`
	Timestamp        string         `json:"timestamp"`
}

type journalEntryJSON struct {
	Agent            string         `json:"agent"`
	Cycle            string         `json:"cycle"`
	EntryID          string         `json:"entry_id"`
	Title            string         `json:"title"`
	Content          string         `json:"content"`
	ContentSignature string         `json:"content_signature"`
	SignalWeight     float64        `json:"signal_weight"`
	Evidence         []evidenceJSON `json:"verifiable_evidence"`
	Timestamp        string         `json:"timestamp"`
	ReceivedAt       string         `json:"received_at"`
}

func (h *fleetAPI) postJournal(w http.ResponseWriter, r *http.Request) {
	var req journalRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	ts, err := parseAPITime("timestamp", req.Timestamp)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if req.SignalWeight == nil {
		WriteError(w, r, core.Invalid("signal_weight", "is required"))
		return
	}
	req.Agent = orTokenAgent(r.Context(), req.Agent)
	agent, err := h.actAs(r.Context(), req.Agent)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if err := checkNotHalted(r.Context(), h.breakers, agent); err != nil {
		WriteError(w, r, err)
		return
	}
	entry := fleet.AgentJournalEntry{
		Agent: req.Agent, Cycle: req.Cycle, EntryID: req.EntryID, Title: req.Title, Content: req.Content,
		ContentSignature: req.ContentSignature, SignalWeight: *req.SignalWeight, Timestamp: ts,
	}
	for _, ev := range req.Evidence {
		entry.Evidence = append(entry.Evidence, fleet.JournalEvidence(ev))
	}
	entry, err = h.fleet.AppendJournal(r.Context(), entry)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, map[string]any{
		"ok": true, "agent": entry.Agent, "cycle": entry.Cycle, "entry_id": entry.EntryID, "received_at": apiTime(entry.ReceivedAt),
	})
}

// getJournal answers a page of a cycle's entries: limit of them (at most
// fleet.journal.max_page_size; fleet.journal.page_size when not given)
// from cursor, and next_cursor, which reads the next page, while one
// follows.
func (h *fleetAPI) getJournal(w http.ResponseWriter, r *http.Request) {
	limit, err := tripwireQueryInt(r, "limit", 0)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	q := r.URL.Query()
	page, err := h.fleet.Journal(r.Context(), q.Get("agent"), q.Get("cycle"), limit, q.Get("cursor"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	out := make([]journalEntryJSON, len(page.Entries))
	for i, e := range page.Entries {
		evidence := make([]evidenceJSON, len(e.Evidence))
		for j, ev := range e.Evidence {
			evidence[j] = evidenceJSON(ev)
		}
		out[i] = journalEntryJSON{
			Agent: e.Agent, Cycle: e.Cycle, EntryID: e.EntryID, Title: e.Title, Content: e.Content,
			ContentSignature: e.ContentSignature, SignalWeight: e.SignalWeight, Evidence: evidence,
			Timestamp: apiTime(e.Timestamp), ReceivedAt: apiTime(e.ReceivedAt),
		}
	}
	body := map[string]any{"ok": true, "entries": out}
	if page.Next != "" {
		body["next_cursor"] = page.Next
	}
	WriteJSON(w, http.StatusOK, body)
}

type attestationRequest struct {
	SealID    string `json:"seal_id"`
	SubjectID string `json:"subject_id"`
	Agent     string `json:"agent"`
	Verdict   string `json:"verdict"`
	Rationale string `json:"rationale"`
	Signature string `json:"signature"`
	Posture   string `json:"posture"`
	// Timestamp is the RFC 3339 time the signature covers, as signed.
	Timestamp string `json:"timestamp"`
}

// subjectID reads the subject id from seal_id (the seed's name) or
// subject_id; both may be given only if they agree.
func subjectID(sealID, subjectID string) (string, error) {
	switch {
	case sealID != "" && subjectID != "" && sealID != subjectID:
		return "", core.Invalid("subject_id", "differs from seal_id; give one of them")
	case sealID != "":
		return sealID, nil
	case subjectID != "":
		return subjectID, nil
	default:
		return "", core.Invalid("subject_id", "is required (seal_id is accepted too)")
	}
}

func (h *fleetAPI) postAttestation(w http.ResponseWriter, r *http.Request) {
	var req attestationRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	id, err := subjectID(req.SealID, req.SubjectID)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	req.Agent = orTokenAgent(r.Context(), req.Agent)
	agent, err := h.actAs(r.Context(), req.Agent)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if err := checkNotHalted(r.Context(), h.breakers, agent); err != nil {
		WriteError(w, r, err)
		return
	}
	if req.Timestamp != "" {
		if _, err := parseAPITime("timestamp", req.Timestamp); err != nil {
			WriteError(w, r, err)
			return
		}
	}
	p, _ := PrincipalOf(r.Context())
	a, err := h.fleet.Attest(r.Context(), fleet.Attestation{
		SubjectID: id, Agent: req.Agent, Verdict: req.Verdict, Rationale: req.Rationale,
		Signature: req.Signature, Posture: req.Posture, Timestamp: req.Timestamp,
	}, p.SigningKey)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{
		"ok": true, "subject_id": a.SubjectID, "agent": a.Agent, "verdict": a.Verdict, "received_at": apiTime(a.ReceivedAt),
	})
}

type subjectRequest struct {
	SealID      string   `json:"seal_id"`
	SubjectID   string   `json:"subject_id"`
	SealHash    string   `json:"seal_hash"`
	SubjectHash string   `json:"subject_hash"`
	Title       string   `json:"title"`
	Agents      []string `json:"agents"`
}

type subjectJSON struct {
	SubjectID    string            `json:"subject_id"`
	SubjectHash  string            `json:"subject_hash"`
	Title        string            `json:"title"`
	Agents       []string          `json:"agents"`
	OpenedAt     string            `json:"opened_at"`
	ClosesAt     string            `json:"closes_at"`
	Outcome      string            `json:"outcome,omitempty"`
	Attestations []attestationJSON `json:"attestations,omitempty"`
}

type attestationJSON struct {
	Agent      string `json:"agent"`
	Verdict    string `json:"verdict"`
	Rationale  string `json:"rationale"`
	Posture    string `json:"posture,omitempty"`
	ReceivedAt string `json:"received_at"`
}

func toSubjectJSON(s fleet.AttestationSubject) subjectJSON {
	agents := s.Agents
	if agents == nil {
		agents = []string{}
	}
	return subjectJSON{
		SubjectID: s.ID, SubjectHash: s.Hash, Title: s.Title, Agents: agents,
		OpenedAt: apiTime(s.OpenedAt), ClosesAt: apiTime(s.ClosesAt), Outcome: string(s.Outcome),
	}
}

func (h *fleetAPI) postSubject(w http.ResponseWriter, r *http.Request) {
	var req subjectRequest
	if err := DecodeJSON(w, r, &req); err != nil {
		WriteError(w, r, err)
		return
	}
	id, err := subjectID(req.SealID, req.SubjectID)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	hash := req.SubjectHash
	if req.SealHash != "" && hash != "" && req.SealHash != hash {
		WriteError(w, r, core.Invalid("subject_hash", "differs from seal_hash; give one of them"))
		return
	}
	if hash == "" {
		hash = req.SealHash
	}
	s, created, err := h.fleet.OpenSubject(r.Context(), fleet.AttestationSubject{ID: id, Hash: hash, Title: req.Title, Agents: req.Agents})
	if err != nil {
		WriteError(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	WriteJSON(w, code, toSubjectJSON(s))
}

func (h *fleetAPI) getOpenSubjects(w http.ResponseWriter, r *http.Request) {
	subjects, err := h.fleet.OpenSubjects(r.Context(), r.URL.Query().Get("agent"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	out := make([]subjectJSON, len(subjects))
	for i, s := range subjects {
		out[i] = toSubjectJSON(s)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "subjects": out})
}

func (h *fleetAPI) getSubject(w http.ResponseWriter, r *http.Request) {
	s, atts, err := h.fleet.Subject(r.Context(), r.PathValue("id"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	out := toSubjectJSON(s)
	for _, a := range atts {
		out.Attestations = append(out.Attestations, attestationJSON{
			Agent: a.Agent, Verdict: a.Verdict, Rationale: a.Rationale, Posture: a.Posture, ReceivedAt: apiTime(a.ReceivedAt),
		})
	}
	WriteJSON(w, http.StatusOK, out)
}

type agentReportJSON struct {
	Agent                         string   `json:"agent"`
	Status                        string   `json:"status"`
	HeartbeatLastAt               *string  `json:"heartbeat_last_at"`
	HeartbeatStreak               int      `json:"heartbeat_streak"`
	JournalEntryCountCurrentCycle int      `json:"journal_entry_count_current_cycle"`
	AttestationsPending           int      `json:"attestations_pending"`
	MIICurrent                    *float64 `json:"mii_current"`
	Mode                          string   `json:"mode,omitempty"`
	Cycle                         string   `json:"cycle,omitempty"`
	NextExpectedBy                *string  `json:"next_expected_by"`
	MissedHeartbeats              int      `json:"missed_heartbeats"`
	Notes                         string   `json:"notes,omitempty"`
}

func (h *fleetAPI) getSnapshot(w http.ResponseWriter, r *http.Request) {
	snap, err := h.fleet.Snapshot(r.Context())
	if err != nil {
		WriteError(w, r, err)
		return
	}
	agents := make([]agentReportJSON, len(snap.Agents))
	for i, a := range snap.Agents {
		agents[i] = agentReportJSON{
			Agent: a.Agent, Status: string(a.Presence), HeartbeatLastAt: optionalTime(a.LastAt),
			HeartbeatStreak: a.Streak, JournalEntryCountCurrentCycle: a.JournalCount,
			AttestationsPending: a.AttestationsPending, Mode: a.Mode, Cycle: a.Cycle,
			NextExpectedBy: optionalTime(a.NextExpectedBy), MissedHeartbeats: a.Missed, Notes: a.Notes,
		}
		if a.Reported {
			agents[i].MIICurrent = &a.MII
		}
	}
	body := map[string]any{"generated_at": apiTime(snap.GeneratedAt), "agents": agents}
	for name, v := range snap.Sections {
		body[name] = v
	}
	WriteJSON(w, http.StatusOK, body)
}
