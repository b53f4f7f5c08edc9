package fleet_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

var attestKey = credential.SigningKey("jat_agent-service-token-0123456789")

// signed returns a, signed now if it has no timestamp, with a valid
// signature over hash.
func signed(a fleet.Attestation, hash string) fleet.Attestation {
	if a.Timestamp == "" {
		a.Timestamp = "2026-04-17T00:00:00Z"
	}
	a.Signature = credential.SignAttestation(attestKey, a.Agent, a.SubjectID, hash, a.Verdict, a.Timestamp, a.Rationale)
	return a
}

// flipByte changes one byte of a hex signature.
func flipByte(sig string) string {
	b := []byte(sig)
	if b[10] == '0' {
		b[10] = '1'
	} else {
		b[10] = '0'
	}
	return string(b)
}

func TestAttest(t *testing.T) {
	const hash = "sha256:seal-hash"
	eve := fleet.Attestation{SubjectID: "seal-C-284-001", Agent: "EVE", Verdict: "pass", Rationale: "Reserve math checks out."}
	aurea := fleet.Attestation{SubjectID: "seal-C-284-001", Agent: "AUREA", Verdict: "flag", Rationale: "Thin margin.", Posture: "cautionary"}
	tests := []struct {
		name      string
		after     time.Duration
		att       fleet.Attestation
		wantErr   error
		wantField string
	}{
		{name: "valid", att: signed(eve, hash)},
		{name: "agent in lower case", att: signed(fleet.Attestation{SubjectID: eve.SubjectID, Agent: "eve", Verdict: "pass"}, hash)},
		{name: "prefixed signature", att: func() fleet.Attestation { a := signed(eve, hash); a.Signature = "hmac-sha256:" + a.Signature; return a }()},
		{name: "posture from the agent that must give one", att: signed(aurea, hash)},
		{name: "last second of the window", after: 5*time.Minute - time.Millisecond, att: signed(eve, hash)},
		{name: "a flipped byte fails", att: func() fleet.Attestation { a := signed(eve, hash); a.Signature = flipByte(a.Signature); return a }(), wantErr: core.ErrUnauthorized},
		{name: "signed over another verdict", att: func() fleet.Attestation { a := signed(eve, hash); a.Verdict = "reject"; return a }(), wantErr: core.ErrUnauthorized},
		{name: "signed over another timestamp", att: func() fleet.Attestation { a := signed(eve, hash); a.Timestamp = "2026-04-17T00:00:01Z"; return a }(), wantErr: core.ErrUnauthorized},
		{name: "signed for another agent", att: func() fleet.Attestation {
			a := signed(fleet.Attestation{SubjectID: eve.SubjectID, Agent: "AUREA", Verdict: "pass"}, hash)
			a.Agent = "EVE"
			return a
		}(), wantErr: core.ErrUnauthorized},
		{name: "signed for another subject", att: func() fleet.Attestation {
			a := signed(fleet.Attestation{SubjectID: "seal-C-284-002", Agent: "EVE", Verdict: "pass"}, hash)
			a.SubjectID = eve.SubjectID
			return a
		}(), wantErr: core.ErrUnauthorized},
		{name: "signed with another token", att: func() fleet.Attestation {
			a := signed(eve, hash)
			a.Signature = credential.SignAttestation(credential.SigningKey("other"), a.Agent, a.SubjectID, hash, a.Verdict, a.Timestamp, a.Rationale)
			return a
		}(), wantErr: core.ErrUnauthorized},
		{name: "signed over another rationale", att: func() fleet.Attestation { a := signed(eve, hash); a.Rationale += "!"; return a }(), wantErr: core.ErrUnauthorized},
		{name: "missing timestamp", att: func() fleet.Attestation { a := signed(eve, hash); a.Timestamp = ""; return a }(), wantField: "timestamp"},
		{name: "signature not hex", att: func() fleet.Attestation { a := signed(eve, hash); a.Signature = "zz"; return a }(), wantErr: core.ErrUnauthorized},
		{name: "posture missing where required", att: func() fleet.Attestation { a := aurea; a.Posture = ""; return signed(a, hash) }(), wantField: "posture"},
		{name: "posture where forbidden", att: func() fleet.Attestation { a := eve; a.Posture = "confident"; return signed(a, hash) }(), wantField: "posture"},
		{name: "unknown posture", att: func() fleet.Attestation { a := aurea; a.Posture = "sleepy"; return signed(a, hash) }(), wantField: "posture"},
		{name: "unknown verdict", att: func() fleet.Attestation { a := eve; a.Verdict = "maybe"; return signed(a, hash) }(), wantField: "verdict"},
		{name: "rationale too long", att: func() fleet.Attestation { a := eve; a.Rationale = strings.Repeat("r", 2001); return signed(a, hash) }(), wantField: "rationale"},
		{name: "missing signature", att: eve, wantField: "signature"},
		{name: "unknown agent", att: func() fleet.Attestation { a := eve; a.Agent = "MALLORY"; return signed(a, hash) }(), wantField: "agent"},
		{name: "unknown subject", att: func() fleet.Attestation { a := eve; a.SubjectID = "seal-none"; return signed(a, hash) }(), wantErr: core.ErrNotFound},
		{name: "window closed", after: 5 * time.Minute, att: signed(eve, hash), wantErr: core.ErrGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFleetFixture(t)
			ctx := context.Background()
			if _, _, err := fx.fleet.OpenSubject(ctx, fleet.AttestationSubject{ID: "seal-C-284-001", Hash: hash, Agents: []string{"EVE", "AUREA"}}); err != nil {
				t.Fatalf("open subject: %v", err)
			}
			fx.clock.Advance(tt.after)
			_, err := fx.fleet.Attest(ctx, tt.att, attestKey)
			_, stored, serr := fx.fleet.Subject(ctx, "seal-C-284-001")
			if serr != nil {
				t.Fatalf("Subject() = %v", serr)
			}
			switch {
			case tt.wantField != "" && fieldOf(err) != tt.wantField:
				t.Fatalf("Attest() = %v, want an invalid %s", err, tt.wantField)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("Attest() = %v, want %v", err, tt.wantErr)
			case tt.wantField == "" && tt.wantErr == nil && err != nil:
				t.Fatalf("Attest() = %v", err)
			}
			if tt.wantField != "" || tt.wantErr != nil {
				if len(stored) != 0 {
					t.Errorf("a refused attestation left %+v", stored)
				}
				return
			}
			if len(stored) != 1 || stored[0].Verdict != tt.att.Verdict || !stored[0].ReceivedAt.Equal(fx.clock.Now()) {
				t.Errorf("stored = %+v, want the one attestation received now", stored)
			}
		})
	}
}

func TestAttestationLastInWindowWins(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	const hash = "sha256:h"
	if _, _, err := fx.fleet.OpenSubject(ctx, fleet.AttestationSubject{ID: "seal-1", Hash: hash}); err != nil {
		t.Fatalf("open subject: %v", err)
	}
	steps := []struct {
		name    string
		advance time.Duration
		verdict string
		wantErr error
		want    string
	}{
		{name: "first verdict", advance: time.Minute, verdict: "pass", want: "pass"},
		{name: "a second verdict in the window replaces it", advance: 3 * time.Minute, verdict: "reject", want: "reject"},
		{name: "after the window nothing changes", advance: time.Minute, verdict: "pass", wantErr: core.ErrGone, want: "reject"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			fx.clock.Advance(s.advance)
			_, err := fx.fleet.Attest(ctx, signed(fleet.Attestation{SubjectID: "seal-1", Agent: "ZEUS", Verdict: s.verdict, Rationale: "r"}, hash), attestKey)
			if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
				t.Fatalf("Attest() = %v, want %v", err, s.wantErr)
			}
			_, stored, err := fx.fleet.Subject(ctx, "seal-1")
			if err != nil || len(stored) != 1 || stored[0].Verdict != s.want {
				t.Errorf("attestations = %+v, %v; want ZEUS's %s", stored, err, s.want)
			}
		})
	}
}

func TestOpenSubject(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	fx.heartbeat(t, "EVE", "C-284")
	fx.heartbeat(t, "HERMES", "C-284")
	fx.clock.Advance(3*time.Hour + time.Minute) // HERMES is now offline, EVE online.

	steps := []struct {
		name        string
		subject     fleet.AttestationSubject
		wantCreated bool
		wantAgents  []string
		wantErr     error
		wantField   string
	}{
		{name: "no agents named awaits the quorum", subject: fleet.AttestationSubject{ID: "seal-1", Hash: "h1", Title: "Seal one"},
			wantCreated: true, wantAgents: []string{"EVE"}},
		{name: "opening it again with the same hash is a no-op", subject: fleet.AttestationSubject{ID: "seal-1", Hash: "h1"},
			wantAgents: []string{"EVE"}},
		{name: "opening it again with another hash conflicts", subject: fleet.AttestationSubject{ID: "seal-1", Hash: "h2"},
			wantErr: core.ErrConflict},
		{name: "named agents, once each, canonical spelling", subject: fleet.AttestationSubject{ID: "card-7-r2", Hash: "h", Agents: []string{"zeus", "AUREA", "ZEUS"}},
			wantCreated: true, wantAgents: []string{"AUREA", "ZEUS"}},
		{name: "unknown agent", subject: fleet.AttestationSubject{ID: "seal-2", Hash: "h", Agents: []string{"EVE", "MALLORY"}}, wantField: "agents[1]"},
		{name: "missing hash", subject: fleet.AttestationSubject{ID: "seal-2"}, wantField: "subject_hash"},
		{name: "bad id", subject: fleet.AttestationSubject{ID: "seal 2", Hash: "h"}, wantField: "subject_id"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got, created, err := fx.fleet.OpenSubject(ctx, s.subject)
			switch {
			case s.wantField != "":
				if fieldOf(err) != s.wantField {
					t.Fatalf("OpenSubject() = %v, want an invalid %s", err, s.wantField)
				}
				return
			case s.wantErr != nil:
				if !errors.Is(err, s.wantErr) {
					t.Fatalf("OpenSubject() = %v, want %v", err, s.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("OpenSubject() = %v", err)
			}
			stored, _, err := fx.fleet.Subject(ctx, s.subject.ID)
			if err != nil {
				t.Fatalf("Subject() = %v", err)
			}
			if created != s.wantCreated || !slices.Equal(stored.Agents, s.wantAgents) || !stored.ClosesAt.Equal(stored.OpenedAt.Add(fleet.AttestationWindow)) ||
				!got.OpenedAt.Equal(stored.OpenedAt) {
				t.Errorf("OpenSubject() = %+v (created %v), stored %+v; want created %v awaiting %v for 5 minutes",
					got, created, stored, s.wantCreated, s.wantAgents)
			}
		})
	}
}

func TestOpenSubjectsAndPending(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	open := func(id string, agents ...string) {
		t.Helper()
		if _, _, err := fx.fleet.OpenSubject(ctx, fleet.AttestationSubject{ID: id, Hash: "h-" + id, Agents: agents}); err != nil {
			t.Fatalf("open %s: %v", id, err)
		}
	}
	open("seal-old", "EVE")
	fx.clock.Advance(4 * time.Minute)
	open("seal-new", "EVE", "ZEUS")
	if _, err := fx.fleet.Attest(ctx, signed(fleet.Attestation{SubjectID: "seal-new", Agent: "ZEUS", Verdict: "pass"}, "h-seal-new"), attestKey); err != nil {
		t.Fatalf("attest: %v", err)
	}
	ids := func(subjects []fleet.AttestationSubject) []string {
		var out []string
		for _, s := range subjects {
			out = append(out, s.ID)
		}
		return out
	}
	steps := []struct {
		name        string
		advance     time.Duration
		agent       string
		wantOpen    []string
		wantPending int
	}{
		{name: "both open for EVE", agent: "EVE", wantOpen: []string{"seal-old", "seal-new"}, wantPending: 2},
		{name: "ZEUS has attested", agent: "ZEUS", wantOpen: []string{"seal-new"}, wantPending: 0},
		{name: "the old window closes", advance: time.Minute, agent: "EVE", wantOpen: []string{"seal-new"}, wantPending: 1},
		{name: "all closed", advance: 5 * time.Minute, agent: "EVE", wantOpen: nil, wantPending: 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			fx.clock.Advance(s.advance)
			subjects, err := fx.fleet.OpenSubjects(ctx, s.agent)
			if err != nil || !slices.Equal(ids(subjects), s.wantOpen) {
				t.Errorf("OpenSubjects(%s) = %v, %v; want %v", s.agent, ids(subjects), err, s.wantOpen)
			}
			rows, err := fx.fleet.FleetStatus(ctx)
			if err != nil {
				t.Fatalf("FleetStatus() = %v", err)
			}
			for _, r := range rows {
				if r.Agent == s.agent && r.AttestationsPending != s.wantPending {
					t.Errorf("%s has %d attestations pending, want %d", s.agent, r.AttestationsPending, s.wantPending)
				}
			}
		})
	}
}
