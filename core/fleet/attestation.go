package fleet

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// AttestationWindow is how long after a subject opens agents may attest to
// it; the last attestation within the window wins.
const AttestationWindow = 5 * time.Minute

// Limits on attestations and their subjects.
const (
	MaxRationale    = 2000
	MaxSubjectTitle = 200
	MaxSubjectHash  = 256
)

// attestationSignaturePrefix may precede the hex HMAC of a signature.
const attestationSignaturePrefix = "hmac-sha256:"

var (
	attestationVerdicts = map[string]bool{"pass": true, "flag": true, "reject": true}
	attestationPostures = map[string]bool{"confident": true, "cautionary": true, "stressed": true, "degraded": true}
)

// AttestationSubject is something agents attest to: a Vault seal, a card
// revision awaiting reviewer sign-off. Its window opens when it is created.
type AttestationSubject struct {
	ID string
	// Hash is the digest of what is attested; signatures cover it.
	Hash  string
	Title string
	// Agents are the agents whose verdict is awaited.
	Agents   []string
	OpenedAt time.Time
	ClosesAt time.Time
	// Outcome is what its verdicts added up to when last decided
	// (DecideAttestations), OutcomeSeq how many times that changed, and
	// FinalAt when the window closed on it (zero while it may change).
	Outcome    Outcome
	OutcomeSeq int
	FinalAt    time.Time
}

// Attestation is one agent's signed verdict on a subject.
type Attestation struct {
	SubjectID string
	Agent     string
	// Verdict is pass, flag or reject.
	Verdict   string
	Rationale string
	// Signature is the hex HMAC-SHA256, keyed with the agent's signing key
	// (see credential.SigningKey), of credential.AttestationMessage over the
	// agent, the subject id, the subject hash, the verdict and Timestamp; it
	// may carry the prefix "hmac-sha256:".
	Signature string
	// Timestamp is the RFC 3339 time the agent signed, exactly as sent.
	Timestamp string
	// Posture is confident, cautionary, stressed or degraded; required from
	// agents configured so and forbidden for the others.
	Posture    string
	ReceivedAt time.Time
}

// AttestationStore keeps attestation subjects and the attestations on them.
type AttestationStore interface {
	// CreateSubject writes a new subject with the agents it awaits; an id
	// already used is ErrDuplicate.
	CreateSubject(ctx context.Context, s AttestationSubject) error
	// Subject returns a subject; ErrNotFound when there is none.
	Subject(ctx context.Context, id string) (AttestationSubject, error)
	// OpenSubjects lists the subjects whose window is open at now, only
	// those awaiting agent unless agent is "".
	OpenSubjects(ctx context.Context, agent string, now time.Time) ([]AttestationSubject, error)
	// PutAttestation stores an attestation, replacing the agent's earlier
	// one on the same subject; a signature stored before (a replay) is
	// ErrDuplicate and stores nothing.
	PutAttestation(ctx context.Context, a Attestation) error
	// Attestations lists the attestations on a subject.
	Attestations(ctx context.Context, subjectID string) ([]Attestation, error)
	// PendingAttestations counts, for each of the agents, the subjects open
	// at now that await it and that it has not attested to; an agent with
	// none is left out.
	PendingAttestations(ctx context.Context, now time.Time, agents []string) (map[string]int, error)
	// AwaitedSubjects lists, for each of the agents, the ids of the
	// subjects open at now that await it and that it has not attested to,
	// by id; an agent with none is left out.
	AwaitedSubjects(ctx context.Context, now time.Time, agents []string) (map[string][]string, error)
	// UndecidedSubjects lists the subjects whose outcome may still change
	// (not final), oldest first, with the agents each awaits.
	UndecidedSubjects(ctx context.Context) ([]AttestationSubject, error)
	// SetOutcome stores a subject's outcome, its count of changes, and when
	// it became final (zero: not yet).
	SetOutcome(ctx context.Context, id string, o Outcome, seq int, finalAt time.Time) error
	// RecentSubjects lists up to limit subjects whose window closes after
	// since, newest first, with the agents each awaits.
	RecentSubjects(ctx context.Context, since time.Time, limit int) ([]AttestationSubject, error)
}

// verifyAttestationSignature checks a signature in constant time.
func verifyAttestationSignature(key []byte, agent, subjectHash string, a Attestation) bool {
	got, err := hex.DecodeString(strings.TrimPrefix(a.Signature, attestationSignaturePrefix))
	if err != nil || len(key) == 0 {
		return false
	}
	want, _ := hex.DecodeString(credential.SignAttestation(key, agent, a.SubjectID, subjectHash, a.Verdict, a.Timestamp, a.Rationale))
	return hmac.Equal(got, want)
}

// OpenSubject opens a subject for attestation now; its window closes
// AttestationWindow later. With no agents named it awaits the current
// quorum (configured agents that are not offline). Opening an id again with
// the same hash returns the existing subject and created false; with another
// hash it is ErrConflict.
func (f *Service) OpenSubject(ctx context.Context, s AttestationSubject) (subject AttestationSubject, created bool, err error) {
	switch {
	case !namePattern.MatchString(s.ID):
		return s, false, core.Invalid("subject_id", "must be 1 to 128 letters, digits, '.', '_' or '-', such as seal-C-284-001")
	case strings.TrimSpace(s.Hash) == "" || len(s.Hash) > MaxSubjectHash || strings.ContainsAny(s.Hash, " \t\r\n"):
		return s, false, core.Invalid("subject_hash", "is required: at most %d characters without spaces", MaxSubjectHash)
	case utf8.RuneCountInString(s.Title) > MaxSubjectTitle:
		return s, false, core.Invalid("title", "must be at most %d characters", MaxSubjectTitle)
	}
	agents := make([]string, 0, len(s.Agents))
	seen := map[string]bool{}
	for i, name := range s.Agents {
		a, err := f.lookupAgent(fmt.Sprintf("agents[%d]", i), name)
		if err != nil {
			return s, false, err
		}
		if !seen[a.Name] {
			seen[a.Name] = true
			agents = append(agents, a.Name)
		}
	}
	if len(agents) == 0 {
		if agents, err = f.Quorum(ctx); err != nil {
			return s, false, err
		}
	}
	s.Agents = agents
	s.Outcome = OutcomePending
	s.OpenedAt = f.deps.Clock.Now()
	s.ClosesAt = s.OpenedAt.Add(AttestationWindow)
	err = f.deps.Attestations.CreateSubject(ctx, s)
	if errors.Is(err, core.ErrDuplicate) {
		existing, err := f.deps.Attestations.Subject(ctx, s.ID)
		if err != nil {
			return s, false, fmt.Errorf("open subject %q: %w", s.ID, err)
		}
		if existing.Hash != s.Hash {
			return existing, false, fmt.Errorf("open subject %q: already open with another hash: %w", s.ID, core.ErrConflict)
		}
		return existing, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("open subject %q: %w", s.ID, err)
	}
	return s, true, nil
}

// Subject returns a subject with the attestations on it so far.
func (f *Service) Subject(ctx context.Context, id string) (AttestationSubject, []Attestation, error) {
	s, err := f.deps.Attestations.Subject(ctx, id)
	if err != nil {
		return s, nil, fmt.Errorf("subject %q: %w", id, err)
	}
	atts, err := f.deps.Attestations.Attestations(ctx, id)
	return s, atts, err
}

// OpenSubjects lists the subjects open now, only those awaiting agent unless
// agent is "". Agents read it to learn what awaits their verdict.
func (f *Service) OpenSubjects(ctx context.Context, agent string) ([]AttestationSubject, error) {
	if agent != "" {
		a, err := f.lookupAgent("agent", agent)
		if err != nil {
			return nil, err
		}
		agent = a.Name
	}
	return f.deps.Attestations.OpenSubjects(ctx, agent, f.deps.Clock.Now())
}

// Attest validates and records an attestation, verifying its signature
// with key (the agent's signing key). An unknown subject is ErrNotFound, a
// signature that does not verify (made for another agent or subject, or
// with another key) ErrUnauthorized, a signature accepted before (a replay)
// ErrDuplicate, and an attestation after the subject's window closed
// ErrGone; none of them changes anything.
func (f *Service) Attest(ctx context.Context, a Attestation, key []byte) (Attestation, error) {
	agent, err := f.lookupAgent("agent", a.Agent)
	if err != nil {
		return a, err
	}
	signedAs := a.Agent // the signature covers the name as sent
	a.Agent = agent.Name
	if err := validateAttestation(a, agent); err != nil {
		return a, err
	}
	s, err := f.deps.Attestations.Subject(ctx, a.SubjectID)
	if err != nil {
		return a, fmt.Errorf("attest %q: %w", a.SubjectID, err)
	}
	if !verifyAttestationSignature(key, signedAs, s.Hash, a) {
		return a, fmt.Errorf("attest %q: signature does not verify: %w", a.SubjectID, core.ErrUnauthorized)
	}
	// One signature has one spelling, so that a replay cannot pass as new
	// with the prefix dropped or the hex in capitals.
	a.Signature = strings.ToLower(strings.TrimPrefix(a.Signature, attestationSignaturePrefix))
	a.ReceivedAt = f.deps.Clock.Now()
	if !a.ReceivedAt.Before(s.ClosesAt) {
		return a, fmt.Errorf("attest %q: the window closed at %s: %w", a.SubjectID, s.ClosesAt.UTC().Format(time.RFC3339), core.ErrGone)
	}
	if err := f.deps.Attestations.PutAttestation(ctx, a); errors.Is(err, core.ErrDuplicate) {
		return a, fmt.Errorf("attest %q: %w", a.SubjectID, core.Refuse(core.ErrDuplicate, "this signature was accepted before; sign again with a new timestamp"))
	} else if err != nil {
		return a, fmt.Errorf("attest %q: %w", a.SubjectID, err)
	}
	return a, nil
}

func validateAttestation(a Attestation, agent AgentConfig) error {
	switch {
	case !namePattern.MatchString(a.SubjectID):
		return core.Invalid("subject_id", "must be the id of an open subject, such as seal-C-284-001")
	case !attestationVerdicts[a.Verdict]:
		return core.Invalid("verdict", "must be pass, flag or reject, not %q", a.Verdict)
	case utf8.RuneCountInString(a.Rationale) > MaxRationale:
		return core.Invalid("rationale", "must be at most %d characters", MaxRationale)
	case a.Signature == "":
		return core.Invalid("signature", "is required")
	case a.Timestamp == "":
		return core.Invalid("timestamp", "is required: the RFC 3339 time the signature covers")
	case agent.Posture == PostureRequired && a.Posture == "":
		return core.Invalid("posture", "is required from %s", agent.Name)
	case agent.Posture != PostureRequired && a.Posture != "":
		return core.Invalid("posture", "is not accepted from %s", agent.Name)
	case a.Posture != "" && !attestationPostures[a.Posture]:
		return core.Invalid("posture", "must be confident, cautionary, stressed or degraded, not %q", a.Posture)
	}
	return nil
}
