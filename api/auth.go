package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// Authenticator resolves a bearer token to who it acts as; an unknown or
// revoked token is core.ErrUnauthorized. credential.Service is one.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (credential.Principal, error)
}

type principalKey struct{}

// PrincipalOf returns who an authenticated request acts as.
func PrincipalOf(ctx context.Context) (credential.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(credential.Principal)
	return p, ok
}

// RoleError is a valid credential refused because it has the wrong role, or
// is an agent credential used for another agent. The API answers 403 with
// needs_role (and token_agent) in the body.
type RoleError struct {
	// Needs lists the roles the route takes.
	Needs []credential.Role
	// TokenAgent is the agent the credential reports for, when it was used
	// for another agent.
	TokenAgent string
	reason     string
}

func (e *RoleError) Error() string { return "forbidden: " + e.reason }

// Unwrap makes a RoleError core.ErrForbidden.
func (e *RoleError) Unwrap() error { return core.ErrForbidden }

func rolesText(roles []credential.Role) string {
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = "an " + string(r)
		if r != credential.Agent && r != credential.Orchestrator {
			parts[i] = "a " + string(r)
		}
	}
	return strings.Join(parts, " or ")
}

// HandleRole registers a route that needs a valid credential of one of
// roles; with no roles any valid credential will do (read-only routes).
// A request body the OpenAPI document describes is validated after the
// credential is checked, before h sees it.
func (s *Server) HandleRole(pattern string, h http.Handler, roles ...credential.Role) {
	s.register(pattern, s.requireRole(roles, s.validated(pattern, h)))
}

func (s *Server) requireRole(roles []credential.Role, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r)
		if err != nil {
			unauthorized(w, r, err)
			return
		}
		if len(roles) > 0 && !hasRole(roles, p.Role) {
			WriteError(w, r, &RoleError{Needs: roles,
				reason: fmt.Sprintf("this route needs %s token; this one is %s token", rolesText(roles), rolesText([]credential.Role{p.Role}))})
			return
		}
		if admitted(r, p.Role) {
			release, err := s.intake.enter(r.Context())
			if err != nil {
				return // the caller went away while it waited
			}
			defer release()
		}
		log := zerolog.Ctx(r.Context()).With().Str("credential", p.ID).Str("role", string(p.Role)).Logger()
		ctx := context.WithValue(log.WithContext(r.Context()), principalKey{}, p)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func hasRole(roles []credential.Role, role credential.Role) bool {
	for _, r := range roles {
		if r == role {
			return true
		}
	}
	return false
}

func unauthorized(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="jarvis"`)
	WriteError(w, r, err)
}

// actAs checks that the request's agent credential reports for agent (a
// name matched as the fleet matches names, without regard to case).
func actAs(ctx context.Context, agent string) error {
	p, _ := PrincipalOf(ctx)
	if p.Role != credential.Agent {
		return &RoleError{Needs: []credential.Role{credential.Agent},
			reason: fmt.Sprintf("this route needs an agent token; this one is %s token", rolesText([]credential.Role{p.Role}))}
	}
	if !strings.EqualFold(p.Agent, agent) {
		return &RoleError{Needs: []credential.Role{credential.Agent}, TokenAgent: p.Agent,
			reason: fmt.Sprintf("this token reports for agent %s only, not for %q", p.Agent, agent)}
	}
	return nil
}

// HaltedError refuses what an agent does while its breaker is open; the
// API answers 423 with the breaker event's id in the body.
type HaltedError struct {
	Agent   string
	EventID string
}

func (e *HaltedError) Error() string {
	return fmt.Sprintf("%v: %s is halted by breaker event %s; a person must review and resume it first",
		core.ErrBreakerOpen, e.Agent, e.EventID)
}

// Unwrap makes a HaltedError core.ErrBreakerOpen.
func (e *HaltedError) Unwrap() error { return core.ErrBreakerOpen }

// BreakerStates tells whether an agent's breaker holds it. breaker.Service
// is one.
type BreakerStates interface {
	Status(ctx context.Context, agent string) (breaker.Status, error)
}

// checkNotHalted refuses with a HaltedError while agent's breaker is open.
func checkNotHalted(ctx context.Context, breakers BreakerStates, agent string) error {
	if breakers == nil {
		return nil
	}
	st, err := breakers.Status(ctx, agent)
	if err != nil {
		return fmt.Errorf("breaker of %s: %w", agent, err)
	}
	if st.State == breaker.Open {
		id := ""
		if st.Event != nil {
			id = st.Event.ID
		}
		return &HaltedError{Agent: agent, EventID: id}
	}
	return nil
}
