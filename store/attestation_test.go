package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

func TestAttestationSubjects(t *testing.T) {
	s := testdb.OpenStore(t, testEngine)
	ctx := context.Background()
	t0 := time.UnixMilli(1_776_384_000_000)
	q := s.Attestations()
	subject := fleet.AttestationSubject{ID: "seal-1", Hash: "h1", Title: "Seal", Agents: []string{"ZEUS", "EVE"}, OpenedAt: t0, ClosesAt: t0.Add(5 * time.Minute)}
	if err := q.CreateSubject(ctx, subject); err != nil {
		t.Fatalf("CreateSubject() = %v", err)
	}
	if err := q.CreateSubject(ctx, fleet.AttestationSubject{ID: "seal-1", Hash: "h2", Agents: []string{"JADE"}, OpenedAt: t0, ClosesAt: t0}); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("CreateSubject() again = %v, want ErrDuplicate", err)
	}
	got, err := q.Subject(ctx, "seal-1")
	if err != nil || got.Hash != "h1" || got.Title != "Seal" || !slices.Equal(got.Agents, []string{"EVE", "ZEUS"}) ||
		!got.OpenedAt.Equal(t0) || !got.ClosesAt.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("Subject() = %+v, %v; want the first one, awaiting EVE and ZEUS", got, err)
	}
	if _, err := q.Subject(ctx, "seal-none"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Subject(unknown) = %v, want ErrNotFound", err)
	}
	if err := q.CreateSubject(ctx, fleet.AttestationSubject{ID: "seal-2", Hash: "h", Agents: []string{"JADE"}, OpenedAt: t0, ClosesAt: t0.Add(time.Minute)}); err != nil {
		t.Fatalf("CreateSubject(seal-2) = %v", err)
	}

	put := func(agent, verdict string, at time.Time) {
		t.Helper()
		if err := q.PutAttestation(ctx, fleet.Attestation{SubjectID: "seal-1", Agent: agent, Verdict: verdict, Rationale: "r", Signature: "s-" + verdict, ReceivedAt: at}); err != nil {
			t.Fatalf("PutAttestation() = %v", err)
		}
	}
	put("ZEUS", "pass", t0.Add(time.Minute))
	put("ZEUS", "reject", t0.Add(2*time.Minute))
	// A signature stored before is a replay: refused, and nothing changes.
	replay := fleet.Attestation{SubjectID: "seal-1", Agent: "ZEUS", Verdict: "pass", Rationale: "r", Signature: "s-pass", ReceivedAt: t0.Add(3 * time.Minute)}
	if err := q.PutAttestation(ctx, replay); !errors.Is(err, core.ErrDuplicate) {
		t.Errorf("PutAttestation(replay) = %v, want ErrDuplicate", err)
	}
	atts, err := q.Attestations(ctx, "seal-1")
	if err != nil || len(atts) != 1 || atts[0].Verdict != "reject" || !atts[0].ReceivedAt.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("Attestations() = %+v, %v; want ZEUS's last verdict only", atts, err)
	}

	ids := func(subjects []fleet.AttestationSubject) []string {
		var out []string
		for _, s := range subjects {
			out = append(out, s.ID)
		}
		return out
	}
	tests := []struct {
		name        string
		agent       string
		now         time.Time
		wantOpen    []string
		wantPending int
	}{
		{name: "EVE awaited on seal-1", agent: "EVE", now: t0, wantOpen: []string{"seal-1"}, wantPending: 1},
		{name: "ZEUS attested already", agent: "ZEUS", now: t0, wantOpen: []string{"seal-1"}, wantPending: 0},
		{name: "JADE awaited on seal-2", agent: "JADE", now: t0, wantOpen: []string{"seal-2"}, wantPending: 1},
		{name: "everything open", agent: "", now: t0, wantOpen: []string{"seal-1", "seal-2"}},
		{name: "seal-2 closed", agent: "JADE", now: t0.Add(time.Minute), wantOpen: nil, wantPending: 0},
		{name: "all closed", agent: "", now: t0.Add(5 * time.Minute), wantOpen: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open, err := q.OpenSubjects(ctx, tt.agent, tt.now)
			if err != nil || !slices.Equal(ids(open), tt.wantOpen) {
				t.Errorf("OpenSubjects() = %v, %v; want %v", ids(open), err, tt.wantOpen)
			}
			if tt.agent == "" {
				return
			}
			if n, err := q.PendingAttestations(ctx, tt.now, []string{tt.agent}); err != nil || n[tt.agent] != tt.wantPending {
				t.Errorf("PendingAttestations() = %v, %v; want %d", n, err, tt.wantPending)
			}
		})
	}
}

// TestRetentionAttestations: a subject whose outcome became final before
// retention.attestations goes with its verdicts, awaited agents and
// signatures; a later final one and an undecided one stay whole.
func TestRetentionAttestations(t *testing.T) {
	s := testdb.OpenStore(t, testEngine)
	ctx := context.Background()
	t0 := time.UnixMilli(1_776_384_000_000)
	q := s.Attestations()
	for _, id := range []string{"old", "recent", "undecided"} {
		if err := q.CreateSubject(ctx, fleet.AttestationSubject{ID: id, Hash: "h", Agents: []string{"EVE", "ZEUS"}, OpenedAt: t0, ClosesAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := q.PutAttestation(ctx, fleet.Attestation{SubjectID: id, Agent: "EVE", Verdict: "pass", Rationale: "r", Signature: "sig-" + id, ReceivedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.SetOutcome(ctx, "old", fleet.OutcomePassed, 1, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := q.SetOutcome(ctx, "recent", fleet.OutcomeVetoed, 1, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneAttestations(ctx, t0.Add(2*time.Hour), 100); err != nil || n != 1 {
		t.Fatalf("PruneAttestations() = %d, %v; want the old subject only", n, err)
	}
	if _, err := q.Subject(ctx, "old"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Subject(old) = %v, want ErrNotFound", err)
	}
	if atts, err := q.Attestations(ctx, "old"); err != nil || len(atts) != 0 {
		t.Errorf("Attestations(old) = %+v, %v; want none left", atts, err)
	}
	for _, id := range []string{"recent", "undecided"} {
		got, err := q.Subject(ctx, id)
		if err != nil || !slices.Equal(got.Agents, []string{"EVE", "ZEUS"}) {
			t.Errorf("Subject(%s) = %+v, %v; want it kept, awaiting EVE and ZEUS", id, got, err)
		}
		if atts, err := q.Attestations(ctx, id); err != nil || len(atts) != 1 {
			t.Errorf("Attestations(%s) = %+v, %v; want EVE's verdict kept", id, atts, err)
		}
	}
	// The old subject's signature went with it; the kept ones still refuse a replay.
	for table, want := range map[string]int{"attestation_signature": 2, "attestation_awaited": 4} {
		var n int
		if err := s.DB.QueryRow(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil || n != want {
			t.Errorf("%s holds %d rows (%v), want %d", table, n, err, want)
		}
	}
	replay := fleet.Attestation{SubjectID: "recent", Agent: "EVE", Verdict: "reject", Rationale: "r", Signature: "sig-recent", ReceivedAt: t0}
	if err := q.PutAttestation(ctx, replay); !errors.Is(err, core.ErrDuplicate) {
		t.Errorf("PutAttestation(replay on a kept subject) = %v, want ErrDuplicate", err)
	}
}
