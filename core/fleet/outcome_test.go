package fleet_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// TestDecide: the verdicts on a subject combine as the reporting contract
// says: a quorum of the awaited agents, a majority of rejects rejects,
// any reject or flag flags, and the veto agent's reject vetoes.
func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 4, 17, 0, 0, 0, 0, time.UTC)
	subject := fleet.AttestationSubject{ID: "seal-1", Agents: []string{"EVE", "ZEUS", "ATLAS"}, OpenedAt: t0, ClosesAt: t0.Add(5 * time.Minute)}
	cfg := fleet.AttestationConfig{Quorum: 0.6, VetoAgent: "ZEUS"}
	verdicts := func(vs ...string) []fleet.Attestation {
		var out []fleet.Attestation
		for _, v := range vs {
			agent, verdict, _ := strings.Cut(v, "=")
			out = append(out, fleet.Attestation{SubjectID: "seal-1", Agent: agent, Verdict: verdict})
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		atts   []fleet.Attestation
		cfg    fleet.AttestationConfig
		closed bool
		want   fleet.Outcome
		needed int
	}{
		{name: "nothing yet", want: fleet.OutcomePending, needed: 2},
		{name: "one of the two needed", atts: verdicts("EVE=pass"), want: fleet.OutcomePending, needed: 2},
		{name: "quorum, all pass", atts: verdicts("EVE=pass", "ATLAS=pass"), want: fleet.OutcomePassed, needed: 2},
		{name: "quorum with a flag", atts: verdicts("EVE=pass", "ATLAS=flag"), want: fleet.OutcomeFlagged, needed: 2},
		{name: "one reject of three", atts: verdicts("EVE=pass", "ATLAS=reject", "ZEUS=pass"), want: fleet.OutcomeFlagged, needed: 2},
		{name: "a majority of rejects", atts: verdicts("EVE=reject", "ATLAS=reject", "ZEUS=pass"), want: fleet.OutcomeRejected, needed: 2},
		{name: "the veto agent rejects alone", atts: verdicts("ZEUS=reject"), want: fleet.OutcomeVetoed, needed: 2},
		{name: "the veto agent's reject outweighs passes", atts: verdicts("EVE=pass", "ATLAS=pass", "ZEUS=reject"), want: fleet.OutcomeVetoed, needed: 2},
		{name: "no veto agent: ZEUS is one vote", cfg: fleet.AttestationConfig{Quorum: 0.6}, atts: verdicts("EVE=pass", "ATLAS=pass", "ZEUS=reject"),
			want: fleet.OutcomeFlagged, needed: 2},
		{name: "an agent not awaited counts for nothing", atts: verdicts("EVE=pass", "HERMES=pass"), want: fleet.OutcomePending, needed: 2},
		{name: "all must attest", cfg: fleet.AttestationConfig{Quorum: 1}, atts: verdicts("EVE=pass", "ATLAS=pass"), want: fleet.OutcomePending, needed: 3},
		{name: "the window closes short of the quorum", atts: verdicts("EVE=pass"), closed: true, want: fleet.OutcomeNoQuorum, needed: 2},
		{name: "the window closes on a quorum", atts: verdicts("EVE=pass", "ATLAS=pass"), closed: true, want: fleet.OutcomePassed, needed: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg
			if tt.cfg.Quorum != 0 {
				c = tt.cfg
			}
			now := t0.Add(time.Minute)
			if tt.closed {
				now = subject.ClosesAt
			}
			d := fleet.Decide(subject, tt.atts, c, now)
			if d.Outcome != tt.want || d.Needed != tt.needed || d.Final != tt.closed {
				t.Errorf("Decide() = %s (needed %d, final %v: %s), want %s (needed %d, final %v)", d.Outcome, d.Needed, d.Final,
					fleet.DecisionText(d), tt.want, tt.needed, tt.closed)
			}
		})
	}
}

// TestDecideAttestations: each change of a subject's outcome is stored and
// relayed to the room once, the veto included; the outcome is final once
// the window closed, and one that closed short of its quorum says so.
func TestDecideAttestations(t *testing.T) {
	fx := newFleetFixture(t)
	fx.cfg.Attestations = fleet.AttestationConfig{Quorum: 0.6, VetoAgent: "ZEUS"}
	fx.fleet = fx.newFleet(t)
	ctx := context.Background()
	for _, id := range []string{"seal-1", "seal-2"} {
		if _, _, err := fx.fleet.OpenSubject(ctx, fleet.AttestationSubject{ID: id, Hash: "h-" + id, Title: "Release *284*",
			Agents: []string{"EVE", "ZEUS", "HERMES"}}); err != nil {
			t.Fatal(err)
		}
	}
	attest := func(id, agent, verdict string) {
		t.Helper()
		if _, err := fx.fleet.Attest(ctx, signed(fleet.Attestation{SubjectID: id, Agent: agent, Verdict: verdict, Timestamp: fx.clock.Now().Format(time.RFC3339Nano)}, "h-"+id), attestKey); err != nil {
			t.Fatal(err)
		}
	}
	decide := func(want int) {
		t.Helper()
		if n, err := fx.fleet.DecideAttestations(ctx); err != nil || n != want {
			t.Fatalf("DecideAttestations() = %d, %v; want %d changed", n, err, want)
		}
	}
	outcome := func(id string) fleet.AttestationSubject {
		t.Helper()
		s, _, err := fx.fleet.Subject(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	decide(0)
	attest("seal-1", "EVE", "pass")
	decide(0)
	attest("seal-1", "HERMES", "pass")
	decide(1)
	decide(0)
	fx.clock.Advance(time.Second)
	attest("seal-1", "ZEUS", "reject")
	decide(1)
	if s := outcome("seal-1"); s.Outcome != fleet.OutcomeVetoed || s.OutcomeSeq != 2 || !s.FinalAt.IsZero() {
		t.Errorf("seal-1 = %s (seq %d, final %v), want vetoed twice changed, not final", s.Outcome, s.OutcomeSeq, s.FinalAt)
	}
	notices := fx.notices(t)
	for key, want := range map[string]string{
		"attest:seal-1:1": "✅ **Attestation `seal-1`** (Release \\*284\\*): passed — 2 of 3 verdicts in (pass 2), quorum 2",
		"attest:seal-1:2": "⛔ **Attestation `seal-1`** (Release \\*284\\*): vetoed — vetoed by ZEUS; 3 of 3 verdicts in (pass 2, reject 1), quorum 2",
	} {
		if notices[key] != want {
			t.Errorf("notice %s = %q, want %q", key, notices[key], want)
		}
	}
	fx.clock.Advance(5 * time.Minute)
	decide(1) // seal-2 closes with no verdict; seal-1 becomes final as it is
	if s := outcome("seal-1"); s.Outcome != fleet.OutcomeVetoed || s.FinalAt.IsZero() {
		t.Errorf("seal-1 after its window = %s final %v, want vetoed, final", s.Outcome, s.FinalAt)
	}
	if s := outcome("seal-2"); s.Outcome != fleet.OutcomeNoQuorum || s.FinalAt.IsZero() {
		t.Errorf("seal-2 after its window = %s final %v, want no-quorum, final", s.Outcome, s.FinalAt)
	}
	decide(0)
	if n := len(fx.notices(t)); n != 3 {
		t.Errorf("%d notices, want the three changes", n)
	}
	subjects, decisions, err := fx.fleet.RecentSubjects(ctx, fx.clock.Now().Add(-time.Hour), 5)
	if err != nil || len(subjects) != 2 || decisions[1].VetoBy != "ZEUS" {
		t.Errorf("RecentSubjects() = %+v, %+v, %v", subjects, decisions, err)
	}
}

// TestHeartbeatAnswerSaysAttestationsAwaited: an agent's heartbeat answer
// lists the open subjects awaiting its verdict, until it gives one.
func TestHeartbeatAnswerSaysAttestationsAwaited(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	if _, _, err := fx.fleet.OpenSubject(ctx, fleet.AttestationSubject{ID: "seal-1", Hash: "h", Agents: []string{"EVE", "ZEUS"}}); err != nil {
		t.Fatal(err)
	}
	if got := fx.heartbeat(t, "EVE", "C-1").Attestations; !slices.Equal(got, []string{"seal-1"}) {
		t.Errorf("EVE's answer awaits %v, want seal-1", got)
	}
	if got := fx.heartbeat(t, "HERMES", "C-1").Attestations; len(got) != 0 {
		t.Errorf("HERMES's answer awaits %v, want nothing", got)
	}
	if _, err := fx.fleet.Attest(ctx, signed(fleet.Attestation{SubjectID: "seal-1", Agent: "EVE", Verdict: "pass"}, "h"), attestKey); err != nil {
		t.Fatal(err)
	}
	if got := fx.heartbeat(t, "EVE", "C-1").Attestations; len(got) != 0 {
		t.Errorf("after attesting, EVE's answer awaits %v", got)
	}
	fx.clock.Advance(5 * time.Minute)
	if got := fx.heartbeat(t, "ZEUS", "C-1").Attestations; len(got) != 0 {
		t.Errorf("after the window, ZEUS's answer awaits %v", got)
	}
}
