package client

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Problem is a refusal from Jarvis: its RFC 9457 problem details.
type Problem struct {
	// Type names the kind of refusal: "urn:jarvis:problem:" and the kind
	// (validation, unauthorized, forbidden, not-found, conflict,
	// budget-exceeded, breaker-open, rate-limited, standby, …).
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	// Detail says what went wrong, for a person to read.
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	// Errors are every bad field of the request, with what was expected.
	Errors []FieldError `json:"errors"`
	// LimitKey is the configuration key of the limit reached, for a size
	// (413), rate (429) or count refusal.
	LimitKey string `json:"limit_key"`
	// RetryAfter is how long to wait before trying again, from the
	// Retry-After header; 0 when Jarvis did not say.
	RetryAfter time.Duration `json:"-"`
	// Members are all of the problem's members, those above included.
	Members map[string]any `json:"-"`
}

// FieldError is one bad field of a request.
type FieldError struct {
	// Field is its path in the body ("spend.cost", "cards[1].goal").
	Field string `json:"field"`
	// Detail says what was expected ("must be a number between 0 and 1").
	Detail string `json:"detail"`
}

func (p *Problem) Error() string {
	if len(p.Errors) > 1 {
		parts := make([]string, len(p.Errors))
		for i, e := range p.Errors {
			parts[i] = e.Field + ": " + e.Detail
		}
		return "jarvis: " + strings.Join(parts, "; ")
	}
	return "jarvis: " + p.Detail
}

// Kind is the kind of refusal: Type without its prefix ("validation").
func (p *Problem) Kind() string { return strings.TrimPrefix(p.Type, typePrefix) }

// Is makes errors.Is(err, ErrBreakerOpen) and the like true for a problem
// of that kind.
func (p *Problem) Is(target error) bool {
	k, ok := target.(kind)
	return ok && p.Kind() == string(k)
}

const typePrefix = "urn:jarvis:problem:"

// kind is a kind of refusal, for errors.Is.
type kind string

func (k kind) Error() string { return "jarvis: " + string(k) }

// The kinds of refusal, for errors.Is(err, …).
var (
	// ErrValidation: the request is malformed; Problem.Errors says how.
	ErrValidation error = kind("validation")
	// ErrUnauthorized: the token is missing, wrong or revoked.
	ErrUnauthorized error = kind("unauthorized")
	// ErrForbidden: the token may not do this (another agent's report, a
	// route for another role).
	ErrForbidden error = kind("forbidden")
	// ErrNotFound: no such card, subject, approval or route.
	ErrNotFound error = kind("not-found")
	// ErrConflict: the write collides with what is stored.
	ErrConflict error = kind("conflict")
	// ErrBudgetExceeded: a priority class has no room left in its window;
	// RetryAfter says when it has.
	ErrBudgetExceeded error = kind("budget-exceeded")
	// ErrBreakerOpen: the agent is halted; stop until a person resumes it.
	ErrBreakerOpen error = kind("breaker-open")
	// ErrRateLimited: too many requests; wait RetryAfter.
	ErrRateLimited error = kind("rate-limited")
	// ErrStandby: this Jarvis does not hold the workspace lease; send
	// writes to the one that does, or retry after RetryAfter.
	ErrStandby error = kind("standby")
)

// problemOf reads a refusal; an answer that is not problem details still
// becomes a Problem with its status.
func problemOf(resp *http.Response, body []byte) *Problem {
	p := &Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
	if json.Unmarshal(body, p) != nil || json.Unmarshal(body, &p.Members) != nil || p.Detail == "" {
		p.Detail = strings.TrimSpace(string(body))
		if p.Detail == "" {
			p.Detail = resp.Status
		}
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		p.RetryAfter = time.Duration(s) * time.Second
	}
	return p
}
