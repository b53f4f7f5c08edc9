package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/lease"
)

// ProblemContentType is the media type of every error the API answers
// (RFC 9457 problem details).
const ProblemContentType = "application/problem+json"

// ProblemTypePrefix begins the type of every problem the API answers; the
// rest names the kind of refusal ("urn:jarvis:problem:validation").
const ProblemTypePrefix = "urn:jarvis:problem:"

// StandbyRetryAfter is the Retry-After of a write refused because this
// Jarvis does not hold the workspace lease.
const StandbyRetryAfter = 5 * time.Second

// problemOf maps core's sentinel errors to HTTP status codes and problem
// types, in one table: the first row the error matches answers it. A
// budget refusal has a status of its own (402), apart from a rate limit's
// 429, so that an agent can tell "slow down" from "this class is spent".
var problemOf = []struct {
	err  error
	code int
	kind string
}{
	{core.ErrInvalid, http.StatusBadRequest, "validation"},
	{core.ErrUnauthorized, http.StatusUnauthorized, "unauthorized"},
	{core.ErrForbidden, http.StatusForbidden, "forbidden"},
	{core.ErrNotFound, http.StatusNotFound, "not-found"},
	{core.ErrConflict, http.StatusConflict, "conflict"},
	{core.ErrDuplicate, http.StatusConflict, "duplicate"},
	{core.ErrIllegalTransition, http.StatusConflict, "illegal-transition"},
	{core.ErrStaleEpoch, http.StatusServiceUnavailable, "standby"},
	{core.ErrGone, http.StatusGone, "gone"},
	{core.ErrExpired, http.StatusGone, "expired"},
	{core.ErrUnprocessable, http.StatusUnprocessableEntity, "unprocessable"},
	{core.ErrBudgetExceeded, http.StatusPaymentRequired, "budget-exceeded"},
	{core.ErrRateLimited, http.StatusTooManyRequests, "rate-limited"},
	{core.ErrLeaseHeld, http.StatusServiceUnavailable, "standby"},
	{core.ErrBreakerOpen, http.StatusLocked, "breaker-open"},
}

// StatusOf returns the HTTP status for an error.
func StatusOf(err error) int {
	code, _ := problemKind(err)
	return code
}

// problemKind returns the status and the problem type's last part for an
// error; an error no row matches is an internal error.
func problemKind(err error) (int, string) {
	for _, m := range problemOf {
		if errors.Is(err, m.err) {
			return m.code, m.kind
		}
	}
	return http.StatusInternalServerError, "internal"
}

// ProblemMembers is an error that adds members of its own to its problem
// details: a limit's configuration key (limit_key), when to retry
// (retry_at). WriteError finds it anywhere in the error's chain; the
// standard members (type, title, status, detail, instance, errors) are
// never replaced.
type ProblemMembers interface {
	error
	ProblemMembers() map[string]any
}

// FieldErrors are every field of a request that is wrong, each with what
// was expected; the API answers them at once, in one problem's errors
// list. They are an ErrInvalid.
type FieldErrors []*core.FieldError

func (fe FieldErrors) Error() string {
	parts := make([]string, len(fe))
	for i, e := range fe {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap makes FieldErrors an ErrInvalid.
func (fe FieldErrors) Unwrap() error { return core.ErrInvalid }

// fieldProblem is one entry of a problem's errors list.
type fieldProblem struct {
	// Field is the field's path in the JSON body ("spend.cost",
	// "cards[1].goal"), or a header or query parameter's name.
	Field string `json:"field"`
	// Detail says what was expected, in JSON's words.
	Detail string `json:"detail"`
}

// WriteError answers with an RFC 9457 problem details object
// (application/problem+json): type, title, status, detail, instance (the
// path), and errors, every bad field with what was expected, when a request
// did not validate. Members beyond those say more about some refusals:
// needs_role and token_agent for a credential refused, agent and
// breaker_event for a halted agent, holder and epoch for a standby, and any
// an error adds as a ProblemMembers. Every problem also carries ok: false,
// error (the detail) and, for a bad field, field (the first), which agents
// written before problem details read. Internal errors are logged and not
// shown.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	code, kind := problemKind(err)
	detail := err.Error()
	body := map[string]any{}
	var extra ProblemMembers
	if errors.As(err, &extra) {
		for k, v := range extra.ProblemMembers() {
			body[k] = v
		}
	}
	var fields FieldErrors
	var fe *core.FieldError
	switch {
	case errors.As(err, &fields):
	case errors.As(err, &fe):
		fields = FieldErrors{fe}
	}
	if len(fields) > 0 {
		list := make([]fieldProblem, len(fields))
		for i, f := range fields {
			list[i] = fieldProblem{Field: f.Field, Detail: f.Reason}
		}
		body["errors"], body["field"] = list, fields[0].Field
	}
	var re *RoleError
	if errors.As(err, &re) {
		body["needs_role"] = re.Needs
		if re.TokenAgent != "" {
			body["token_agent"] = re.TokenAgent
		}
	}
	var he *HaltedError
	if errors.As(err, &he) {
		body["agent"], body["breaker_event"] = he.Agent, he.EventID
	}
	if errors.Is(err, core.ErrLeaseHeld) || errors.Is(err, core.ErrStaleEpoch) {
		// A standby, or a Jarvis that just lost the lease: the holder takes
		// the request, and this one may after a takeover.
		w.Header().Set("Retry-After", strconv.Itoa(int(StandbyRetryAfter/time.Second)))
		detail = "this Jarvis does not hold the workspace lease: send writes to the one that does"
		var held *lease.HeldError
		if errors.As(err, &held) && authenticatedIn(r) {
			body["holder"], body["epoch"] = held.Lease.Holder, held.Lease.Epoch
		}
	}
	if code == http.StatusInternalServerError {
		zerolog.Ctx(r.Context()).Err(err).Msg("Failed to handle request")
		detail = "internal error"
	}
	writeProblem(w, r, code, kind, detail, body)
}

// writeProblem writes a problem of the given status and kind, with body's
// members beside the standard ones.
func writeProblem(w http.ResponseWriter, r *http.Request, code int, kind, detail string, body map[string]any) {
	body["type"], body["title"], body["status"], body["detail"] = ProblemTypePrefix+kind, http.StatusText(code), code, detail
	body["instance"], body["ok"], body["error"] = r.URL.Path, false, detail
	w.Header().Set("Content-Type", ProblemContentType)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
