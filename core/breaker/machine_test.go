package breaker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

func TestBreakerMoves(t *testing.T) {
	actions := []Action{ActOpen, ActReview, ActResume, ActVerified,
		ActVerifyFailed, ActTimeout, ActOverrule}
	legal := map[State]map[Action]State{
		Closed: {ActOpen: Open},
		Open: {ActReview: Open, ActResume: HalfOpen,
			ActOverrule: Closed},
		HalfOpen: {ActOpen: Open, ActVerified: Closed, ActVerifyFailed: Open,
			ActTimeout: Open, ActOverrule: Closed},
	}
	for _, from := range []State{Closed, Open, HalfOpen} {
		for _, act := range actions {
			want, ok := legal[from][act]
			name := string(from) + " " + string(act)
			t.Run(name, func(t *testing.T) {
				to, err := nextState("ani", from, act)
				if !ok {
					if !errors.Is(err, core.ErrIllegalTransition) || !strings.Contains(err.Error(), "breaker of ani is "+string(from)+", cannot ") {
						t.Errorf("got %s, %v; want an illegal transition that says why", to, err)
					}
					return
				}
				if err != nil || to != want {
					t.Errorf("got %s, %v; want %s", to, err, want)
				}
			})
		}
	}
}

// exampleConfig is the breaker section as config.example.yaml gives it.
var exampleConfig = Config{OpenOn: []Trigger{
	{Urgency: UrgencyCritical, Severity: SeverityAny},
	{Urgency: UrgencyHigh, Severity: SeveritySafety},
}}

func TestBreakerConfigValidate(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantField string
	}{
		{name: "default", cfg: exampleConfig},
		{name: "no triggers: only the supervisor opens", cfg: Config{HalfOpenTimeout: time.Minute}},
		{name: "negative timeout", cfg: Config{HalfOpenTimeout: -time.Second}, wantField: "breaker.half_open_timeout"},
		{name: "unknown urgency", cfg: Config{OpenOn: []Trigger{{Urgency: "urgent", Severity: SeverityAny}}}, wantField: "breaker.open_on[0].urgency"},
		{name: "missing severity", cfg: Config{OpenOn: []Trigger{{Urgency: UrgencyHigh}}}, wantField: "breaker.open_on[0].severity"},
		{name: "unknown severity", cfg: Config{OpenOn: []Trigger{
			{Urgency: UrgencyHigh, Severity: SeveritySafety}, {Urgency: UrgencyLow, Severity: "mild"}}}, wantField: "breaker.open_on[1].severity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			var fe *core.FieldError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField):
				t.Errorf("Validate: %v, want an error on %s", err, tt.wantField)
			}
		})
	}
}

func TestBreakerDefaultTriggers(t *testing.T) {
	cfg := exampleConfig
	for _, u := range urgencies {
		for _, s := range severities {
			want := u == UrgencyCritical || (u == UrgencyHigh && s == SeveritySafety)
			t.Run(string(u)+" "+string(s), func(t *testing.T) {
				if got := cfg.opens(u, s); got != want {
					t.Errorf("opens %v, want %v", got, want)
				}
			})
		}
	}
}

func TestBreakerOpenInputChecks(t *testing.T) {
	long := strings.Repeat("x", MaxReason+1)
	tests := []struct {
		name      string
		in        OpenInput
		wantField string
		wantBy    string
	}{
		{name: "complete", in: OpenInput{Severity: SeverityIdentity, Reason: " drift ", Evidence: []string{" a "}, By: "aster"}, wantBy: "aster"},
		{name: "supervisor by default", in: OpenInput{Severity: SeverityIdentity, Reason: "drift"}, wantBy: DefaultSupervisor},
		{name: "no severity", in: OpenInput{Reason: "drift"}, wantField: "severity"},
		{name: "unknown severity", in: OpenInput{Severity: "Safety", Reason: "drift"}, wantField: "severity"},
		{name: "no reason", in: OpenInput{Severity: SeveritySafety, Reason: "  "}, wantField: "reason"},
		{name: "reason too long", in: OpenInput{Severity: SeveritySafety, Reason: long}, wantField: "reason"},
		{name: "empty evidence item", in: OpenInput{Severity: SeveritySafety, Reason: "drift", Evidence: []string{"a", " "}}, wantField: "evidence[1]"},
		{name: "too much evidence", in: OpenInput{Severity: SeveritySafety, Reason: "drift", Evidence: make([]string, MaxEvidence+1)}, wantField: "evidence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			err := in.normalize()
			var fe *core.FieldError
			if tt.wantField != "" {
				if !errors.As(err, &fe) || fe.Field != tt.wantField {
					t.Errorf("normalize: %v, want an error on %s", err, tt.wantField)
				}
				return
			}
			if err != nil || in.By != tt.wantBy || strings.TrimSpace(in.Reason) != in.Reason {
				t.Errorf("normalize: %v, by %q reason %q; want by %q, trimmed", err, in.By, in.Reason, tt.wantBy)
			}
			if len(tt.in.Evidence) > 0 && (in.Evidence[0] != "a" || tt.in.Evidence[0] != " a ") {
				t.Errorf("evidence %q (caller's %q), want it trimmed in a copy", in.Evidence, tt.in.Evidence)
			}
		})
	}
}

func TestBreakerNoticeBody(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := Event{ID: "brk_1a2b3c4d", Agent: "ani", At: at, Severity: SeverityBoundary,
		Reason: "said <b>hi</b> and\n**shouted**", Evidence: []string{"```\nbreak out", "second"}, OpenedBy: "aster"}
	admins := []string{"@alice:test"}
	tests := []struct {
		name    string
		ev      Event
		state   State
		timeout time.Duration
		want    []string
		notWant []string
	}{
		{
			name: "open", ev: ev, state: Open,
			want: []string{
				`🛑 **HALTED**: circuit breaker open for agent **ani**`,
				`**Reason:** said \<b\>hi\</b\> and \*\*shouted\*\*`,
				"**Event:** `brk_1a2b3c4d`, opened Mar 1 12:00 UTC by aster",
				"````\n[1] ```\nbreak out\n[2] second\n````",
				"React 👀 to take the review", "`!breaker reset brk_1a2b3c4d`", "\n\n@alice:test",
			},
		},
		{
			name: "half-open with a timeout", ev: ev, state: HalfOpen, timeout: 90 * time.Minute,
			want:    []string{"🟡 **HALF-OPEN**", "Without one within 1h30m the breaker opens again", "@alice:test"},
			notWant: []string{"**HALTED**"},
		},
		{
			name: "resolved", ev: func() Event { e := ev; e.Resolution = Verified; return e }(), state: Closed,
			want:    []string{"✅ **RESOLVED**"},
			notWant: []string{"What to do", "@alice:test"},
		},
		{
			name: "superseded", ev: func() Event { e := ev; e.Resolution, e.NextID = Superseded, "brk_99999999"; return e }(), state: Open,
			want: []string{"🔁 **RE-OPENED**: the halt of **ani** continues as event `brk_99999999`"},
		},
		{
			name: "no evidence", ev: func() Event { e := ev; e.Evidence = nil; return e }(), state: Open,
			want: []string{"**Evidence:** none given"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := noticeBody(tt.ev, Record{Agent: "ani", State: tt.state}, admins, tt.timeout, "status line")
			for _, w := range append(tt.want, "- **Status:** status line") {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q:\n%s", w, body)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(body, w) {
					t.Errorf("body has %q:\n%s", w, body)
				}
			}
		})
	}
}
