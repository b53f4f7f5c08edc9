package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// ProblemContentType is the media type of every error the API answers
// (RFC 9457 problem details).
const ProblemContentType = "application/problem+json"

// ProblemTypePrefix begins the type of every problem the API answers; the
// rest names the kind of refusal ("urn:jarvis:problem:validation").
const ProblemTypePrefix = "urn:jarvis:problem:"

// problemKinds names the kind of refusal, the last part of a problem's
// type, of the sentinels whose kind is not their status's (statusKinds).
var problemKinds = []struct {
	err  error
	kind string
}{
	{core.ErrDuplicate, "duplicate"},
	{core.ErrIllegalTransition, "illegal-transition"},
	{core.ErrExpired, "expired"},
	{core.ErrBudgetExceeded, "budget-exceeded"},
	{core.ErrBreakerOpen, "breaker-open"},
}

// statusKinds names the kind of refusal of each status; a status not here
// is named after its text ("Payment Required": payment-required).
var statusKinds = map[int]string{
	http.StatusBadRequest: "validation", http.StatusNotFound: "not-found", http.StatusRequestEntityTooLarge: "too-large",
	http.StatusUnprocessableEntity: "unprocessable", http.StatusTooManyRequests: "rate-limited", http.StatusInternalServerError: "internal",
	http.StatusServiceUnavailable: "standby",
}

// problemKind returns the kind of refusal err answered with code is.
func problemKind(err error, code int) string {
	for _, k := range problemKinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	if kind, ok := statusKinds[code]; ok {
		return kind
	}
	return strings.ReplaceAll(strings.ToLower(http.StatusText(code)), " ", "-")
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

// writeProblem writes a problem of the given status and kind, with body's
// members beside the standard ones.
func writeProblem(w http.ResponseWriter, r *http.Request, code int, kind, detail string, body map[string]any) {
	body["type"], body["title"], body["status"], body["detail"] = ProblemTypePrefix+kind, http.StatusText(code), code, detail
	body["instance"], body["ok"], body["error"] = r.URL.Path, false, detail
	w.Header().Set("Content-Type", ProblemContentType)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
