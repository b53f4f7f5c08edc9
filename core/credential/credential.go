// Package credential is who may call Jarvis's HTTP API: one bearer token
// per agent and per role, stored as its SHA-256 and shown once, and the
// per-agent key that signs attestations.
package credential

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Role is what a credential may do.
type Role string

// The roles.
const (
	// Agent reports for its own agent only: heartbeats, journal entries,
	// attestations, its cards' state changes and questions.
	Agent Role = "agent"
	// Supervisor opens breakers and verifies half-open trials.
	Supervisor Role = "supervisor"
	// Orchestrator publishes card sets, amends cards and opens attestation
	// subjects.
	Orchestrator Role = "orchestrator"
	// Receiver delivers Alertmanager's notifications and manages the
	// silences of scripts (a deploy's maintenance window).
	Receiver Role = "receiver"
)

// Roles lists the roles.
var Roles = []Role{Agent, Supervisor, Orchestrator, Receiver}

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool {
	return r == Agent || r == Supervisor || r == Orchestrator || r == Receiver
}

// CacheTTL bounds how old a credential looked up in the store may be when a
// request is authenticated with it: a revocation, even one made by another
// process (the CLI), takes effect within this long.
const CacheTTL = 3 * time.Second

// touchEvery is how often a credential's last use is written, at most.
const touchEvery = time.Minute

// tokenPrefix starts every API token, so that a leaked one is easy to
// recognise.
const tokenPrefix = "jat_"

// tokenBytes is how many random bytes a token carries (256 bits).
const tokenBytes = 32

// signingKeyLabel is the message that derives an agent's attestation
// signing key from its bearer token.
const signingKeyLabel = "jarvis attestation key v1"

// attestationContext starts every signed attestation message.
const attestationContext = "jarvis-attestation-v1"

var agentPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Credential is a bearer token as Jarvis keeps it, without the secret.
type Credential struct {
	ID   string
	Role Role
	// Agent is the agent an agent credential reports for; empty for the
	// other roles.
	Agent     string
	CreatedAt time.Time
	// LastUsedAt is when the credential last authenticated a request
	// (written at most once a minute); zero when never.
	LastUsedAt time.Time
}

// Principal is who an authenticated request acts as.
type Principal struct {
	Credential
	// SigningKey verifies the attestations of an agent credential; nil for
	// the other roles.
	SigningKey []byte
}

// Store keeps credentials by the hex SHA-256 of their token.
type Store interface {
	// InsertCredential stores a credential with its token hash and, for an
	// agent, its attestation signing key.
	InsertCredential(ctx context.Context, c Credential, hash string, signingKey []byte) error
	// CredentialByHash returns the credential a token hash belongs to and its
	// signing key, or ErrNotFound.
	CredentialByHash(ctx context.Context, hash string) (Credential, []byte, error)
	// ListCredentials lists every credential, oldest first.
	ListCredentials(ctx context.Context) ([]Credential, error)
	// DeleteCredential deletes a credential; an unknown id is ErrNotFound.
	DeleteCredential(ctx context.Context, id string) error
	// TouchCredentials records when credentials were last used, by id; a
	// time earlier than the one stored changes nothing.
	TouchCredentials(ctx context.Context, uses map[string]time.Time) error
}

// Deps are what the credential service works with.
type Deps struct {
	Store Store
	Clock core.Clock
	// Agents, when set, lists the agents an agent credential may be issued
	// for (fleet.agents); a name is matched without regard to case and kept
	// as the list spells it.
	Agents func() []string
}

// Service issues, lists, revokes and checks API credentials.
type Service struct {
	deps Deps

	mu    sync.Mutex
	cache map[string]cached

	// touchMu guards touching and untouched: see touch.
	touchMu   sync.Mutex
	touching  bool
	untouched map[string]time.Time
}

type cached struct {
	principal Principal
	fetched   time.Time
	touched   time.Time
}

// NewService returns the credential service.
func NewService(deps Deps) *Service {
	return &Service{deps: deps, cache: map[string]cached{}, untouched: map[string]time.Time{}}
}

// Issue makes a credential for role (and, for an agent, for agent) and
// returns its token, which is never shown again.
func (s *Service) Issue(ctx context.Context, role Role, agent string) (string, Credential, error) {
	switch {
	case !role.Valid():
		return "", Credential{}, core.Invalid("role", "must be agent, supervisor, orchestrator or receiver, not %q", role)
	case role == Agent && agent == "":
		return "", Credential{}, core.Invalid("agent", "is required for an agent credential: name the agent it reports for")
	case role == Agent && !agentPattern.MatchString(agent):
		return "", Credential{}, core.Invalid("agent", "must be 1 to 64 letters, digits, '.', '_' or '-', not %q", agent)
	case role != Agent && agent != "":
		return "", Credential{}, core.Invalid("agent", "is only for agent credentials; a %s credential acts for no agent", role)
	}
	if role == Agent && s.deps.Agents != nil {
		known := s.deps.Agents()
		i := slices.IndexFunc(known, func(name string) bool { return strings.EqualFold(name, agent) })
		if i < 0 {
			return "", Credential{}, core.Invalid("agent", "%q is not an agent Jarvis watches (%s); add it with "+
				"`jarvis agent add %s --cadence 24h` (or a supervisor's PUT /api/agents/%s), then issue its token", agent, listOrNone(known), agent, agent)
		}
		agent = known[i]
	}
	token := tokenPrefix + randomHex(tokenBytes)
	c := Credential{ID: "cred_" + randomHex(6), Role: role, Agent: agent,
		CreatedAt: time.UnixMilli(s.deps.Clock.Now().UnixMilli()).UTC()}
	var key []byte
	if role == Agent {
		key = SigningKey(token)
	}
	if err := s.deps.Store.InsertCredential(ctx, c, hashToken(token), key); err != nil {
		return "", Credential{}, fmt.Errorf("issue %s credential: %w", role, err)
	}
	return token, c, nil
}

// List lists every credential, oldest first, without secrets.
func (s *Service) List(ctx context.Context) ([]Credential, error) {
	list, err := s.deps.Store.ListCredentials(ctx)
	if err != nil {
		return nil, fmt.Errorf("list credentials: %w", err)
	}
	return list, nil
}

// Revoke deletes a credential. This process forgets it at once; another
// Jarvis process stops accepting it within CacheTTL.
func (s *Service) Revoke(ctx context.Context, id string) error {
	if err := s.deps.Store.DeleteCredential(ctx, id); err != nil {
		return fmt.Errorf("revoke credential %q: %w", id, err)
	}
	s.mu.Lock()
	for hash, c := range s.cache {
		if c.principal.ID == id {
			delete(s.cache, hash)
		}
	}
	s.mu.Unlock()
	return nil
}

// Authenticate returns who a bearer token acts as; a missing, unknown or
// revoked token is ErrUnauthorized. A credential is looked up again once
// its cached copy is CacheTTL old.
func (s *Service) Authenticate(ctx context.Context, token string) (Principal, error) {
	if !strings.HasPrefix(token, tokenPrefix) {
		return Principal{}, core.ErrUnauthorized
	}
	hash := hashToken(token)
	now := s.deps.Clock.Now()
	s.mu.Lock()
	c, ok := s.cache[hash]
	s.mu.Unlock()
	if !ok || now.Sub(c.fetched) >= CacheTTL || now.Before(c.fetched) {
		cred, key, err := s.deps.Store.CredentialByHash(ctx, hash)
		switch {
		case errors.Is(err, core.ErrNotFound):
			s.mu.Lock()
			delete(s.cache, hash)
			s.mu.Unlock()
			return Principal{}, core.ErrUnauthorized
		case err != nil:
			return Principal{}, fmt.Errorf("look up credential: %w", err)
		}
		c = cached{principal: Principal{Credential: cred, SigningKey: key}, fetched: now, touched: c.touched}
	}
	touch := now.Sub(c.touched) >= touchEvery
	if touch {
		c.touched = now
	}
	s.mu.Lock()
	s.cache[hash] = c
	s.mu.Unlock()
	if touch {
		s.touch(ctx, c.principal.ID, now)
	}
	return c.principal, nil
}

// touch records that credential id was used at at. The last use is
// bookkeeping: a failure to write it refuses nothing, and the next request
// with the credential tries again.
//
// One transaction at a time writes the uses: a request that finds one
// under way leaves its use to it and goes on, and the request writing
// writes again what came meanwhile before it returns. Credentials first
// used together (every agent at Jarvis's start) are written together, not
// in a transaction each, which on PostgreSQL collided with each other and
// were run again.
func (s *Service) touch(ctx context.Context, id string, at time.Time) {
	s.touchMu.Lock()
	if prev, ok := s.untouched[id]; !ok || at.After(prev) {
		s.untouched[id] = at
	}
	if s.touching {
		s.touchMu.Unlock()
		return
	}
	s.touching = true
	// The uses written belong to other requests too.
	ctx = context.WithoutCancel(ctx)
	for len(s.untouched) > 0 {
		uses := s.untouched
		s.untouched = map[string]time.Time{}
		s.touchMu.Unlock()
		if err := s.deps.Store.TouchCredentials(ctx, uses); err != nil {
			s.forgetTouched(uses)
		}
		s.touchMu.Lock()
	}
	s.touching = false
	s.touchMu.Unlock()
}

// forgetTouched marks the cached credentials of uses as not touched, so
// that their next request writes the use again.
func (s *Service) forgetTouched(uses map[string]time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for hash, c := range s.cache {
		if _, ok := uses[c.principal.ID]; ok {
			c.touched = time.Time{}
			s.cache[hash] = c
		}
	}
}

// SigningKey derives an agent's attestation signing key from its bearer
// token: HMAC-SHA256(key = token, message = "jarvis attestation key v1").
func SigningKey(token string) []byte {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(signingKeyLabel))
	return mac.Sum(nil)
}

// AttestationMessage is exactly what an attestation signature covers:
// "jarvis-attestation-v1\n" + agent + "\n" + subject + "\n" + contentHash +
// "\n" + verdict + "\n" + timestamp + "\n" + rationale. The rationale comes
// last, so a newline inside it cannot shift the fields before it.
func AttestationMessage(agent, subject, contentHash, verdict, timestamp, rationale string) string {
	return strings.Join([]string{attestationContext, agent, subject, contentHash, verdict, timestamp, rationale}, "\n")
}

// SignAttestation returns the hex HMAC-SHA256 of the attestation message
// under key (an agent's signing key).
func SignAttestation(key []byte, agent, subject, contentHash, verdict, timestamp, rationale string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(AttestationMessage(agent, subject, contentHash, verdict, timestamp, rationale)))
	return hex.EncodeToString(mac.Sum(nil))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails: since Go 1.24 crypto/rand crashes instead
	return hex.EncodeToString(b)
}
