package api

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
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
// A budget refusal has a status of its own (402), apart from a rate
// limit's 429, so that an agent can tell "slow down" from "this class is
// spent".
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
	{core.ErrBudgetExceeded, http.StatusPaymentRequired},
	{core.ErrRateLimited, http.StatusTooManyRequests},
	{core.ErrLeaseHeld, http.StatusServiceUnavailable},
	{core.ErrBreakerOpen, http.StatusLocked},
	{core.ErrTooLarge, http.StatusRequestEntityTooLarge},
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
	code := StatusOf(err)
	kind := problemKind(err, code)
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

// errEmptyBody is DecodeJSON's answer to a request without a body.
var errEmptyBody = core.Invalid("body", "is empty")

// DecodeOptionalJSON is DecodeJSON for a route whose body may be left out:
// an empty body leaves v as it is.
func DecodeOptionalJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if err := DecodeJSON(w, r, v); err != errEmptyBody {
		return err
	}
	return nil
}

// DecodeJSON reads a JSON body of at most MaxBodyBytes into v, refusing
// trailing data with an error that names what is wrong. Fields v does not
// name are ignored: an agent written for a newer Jarvis works with this one
// (the route's validation logs them).
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err := dec.Decode(v); err != nil {
		var maxErr *http.MaxBytesError
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		var netErr net.Error
		switch {
		case errors.As(err, &maxErr):
			return core.Invalid("body", "larger than %d bytes", MaxBodyBytes)
		case errors.As(err, &typeErr):
			return core.Invalid(typeErr.Field, "must be %s", jsonKind(typeErr.Type))
		case errors.As(err, &syntaxErr):
			return core.Invalid("body", "malformed JSON at byte %d", syntaxErr.Offset)
		case errors.As(err, &netErr) && netErr.Timeout():
			return core.Invalid("body", "not received within the read timeout")
		case errors.Is(err, io.EOF):
			return errEmptyBody
		default:
			return core.Invalid("body", "%v", err)
		}
	}
	if dec.More() {
		return core.Invalid("body", "trailing data after the JSON object")
	}
	return nil
}

// jsonKind names a Go type the way JSON does: a number, a string, a list.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value of the documented type"
}
