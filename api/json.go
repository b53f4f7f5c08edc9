package api

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/lease"
)

// MaxBodyBytes is the largest request body the API reads.
const MaxBodyBytes = 64 << 10

// StandbyRetryAfter is the Retry-After of a write refused because this
// Jarvis does not hold the workspace lease.
const StandbyRetryAfter = 5 * time.Second

// statusOf maps core's sentinel errors to HTTP status codes, in one table.
var statusOf = []struct {
	err  error
	code int
}{
	{core.ErrInvalid, http.StatusBadRequest},
	{core.ErrUnauthorized, http.StatusUnauthorized},
	{core.ErrForbidden, http.StatusForbidden},
	{core.ErrNotFound, http.StatusNotFound},
	{core.ErrConflict, http.StatusConflict},
	{core.ErrDuplicate, http.StatusConflict},
	{core.ErrIllegalTransition, http.StatusConflict},
	{core.ErrStaleEpoch, http.StatusServiceUnavailable},
	{core.ErrGone, http.StatusGone},
	{core.ErrExpired, http.StatusGone},
	{core.ErrUnprocessable, http.StatusUnprocessableEntity},
	{core.ErrBudgetExceeded, http.StatusTooManyRequests},
	{core.ErrRateLimited, http.StatusTooManyRequests},
	{core.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{core.ErrLeaseHeld, http.StatusServiceUnavailable},
	{core.ErrBreakerOpen, http.StatusLocked},
}

// StatusOf returns the HTTP status for an error.
func StatusOf(err error) int {
	for _, m := range statusOf {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return http.StatusInternalServerError
}

// WriteJSON writes v as JSON with the given status.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers with the status the error maps to and a JSON body
// {"error": "...", "field": "..."} naming the field at fault when known, the
// role needed (needs_role, token_agent) when a credential was refused, and
// the breaker event (breaker_event) when a halted agent was, and the
// configuration key (limit) when a limit was reached.
// Internal errors are logged and not shown.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	code := StatusOf(err)
	body := map[string]any{"ok": false, "error": err.Error()}
	var fe *core.FieldError
	if errors.As(err, &fe) {
		body["field"] = fe.Field
	}
	var re *RoleError
	if errors.As(err, &re) {
		body["needs_role"] = re.Needs
		if re.TokenAgent != "" {
			body["token_agent"] = re.TokenAgent
		}
	}
	var le *core.LimitError
	if errors.As(err, &le) {
		body["limit"] = le.Key
	}
	var he *HaltedError
	if errors.As(err, &he) {
		body["agent"], body["breaker_event"] = he.Agent, he.EventID
	}
	if errors.Is(err, core.ErrLeaseHeld) || errors.Is(err, core.ErrStaleEpoch) {
		// A standby, or a Jarvis that just lost the lease: the holder takes
		// the request, and this one may after a takeover.
		w.Header().Set("Retry-After", strconv.Itoa(int(StandbyRetryAfter/time.Second)))
		body["error"] = "this Jarvis does not hold the workspace lease: send writes to the one that does"
		var held *lease.HeldError
		if errors.As(err, &held) && authenticatedIn(r) {
			body["holder"], body["epoch"] = held.Lease.Holder, held.Lease.Epoch
		}
	}
	if code == http.StatusInternalServerError {
		zerolog.Ctx(r.Context()).Err(err).Msg("Failed to handle request")
		body["error"] = "internal error"
	}
	WriteJSON(w, code, body)
}

// DecodeJSON reads a JSON body of at most MaxBodyBytes into v, rejecting
// unknown fields and trailing data with an error that names what is wrong.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var maxErr *http.MaxBytesError
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		var netErr net.Error
		switch {
		case errors.As(err, &maxErr):
			return core.Invalid("body", "larger than %d bytes", MaxBodyBytes)
		case errors.As(err, &typeErr):
			return core.Invalid(typeErr.Field, "must be %s", typeErr.Type)
		case errors.As(err, &syntaxErr):
			return core.Invalid("body", "malformed JSON at byte %d", syntaxErr.Offset)
		case errors.As(err, &netErr) && netErr.Timeout():
			return core.Invalid("body", "not received within the read timeout")
		case errors.Is(err, io.EOF):
			return core.Invalid("body", "is empty")
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return core.Invalid(field, "unknown field")
		default:
			return core.Invalid("body", "%v", err)
		}
	}
	if dec.More() {
		return core.Invalid("body", "trailing data after the JSON object")
	}
	return nil
}
