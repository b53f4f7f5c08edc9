package card

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

func TestDecisionInputValidate(t *testing.T) {
	now := time.Date(2026, 7, 9, 12, 0, 0, 0, time.UTC)
	ok := DecisionInput{Question: "Which engine?", Options: []string{"PostgreSQL", "SQLite"},
		Checkpoint: Checkpoint{Branch: "card/db", Note: "schema drafted"}}
	with := func(f func(*DecisionInput)) DecisionInput {
		in := ok
		in.Options = append([]string(nil), ok.Options...)
		f(&in)
		return in
	}
	tests := []struct {
		name      string
		in        DecisionInput
		wantField string // "" means valid
	}{
		{name: "minimal", in: ok},
		{name: "deadline and default", in: with(func(in *DecisionInput) { in.Deadline = now.Add(time.Hour); in.DefaultOption = 2 })},
		{name: "ten options", in: with(func(in *DecisionInput) {
			in.Options = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}
		})},
		{name: "one option", in: with(func(in *DecisionInput) { in.Options = []string{"only"} }), wantField: "options"},
		{name: "eleven options", in: with(func(in *DecisionInput) {
			in.Options = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}
		}), wantField: "options"},
		{name: "no question", in: with(func(in *DecisionInput) { in.Question = " " }), wantField: "question"},
		{name: "no branch", in: with(func(in *DecisionInput) { in.Checkpoint.Branch = "" }), wantField: "checkpoint.branch"},
		{name: "no note", in: with(func(in *DecisionInput) { in.Checkpoint.Note = "" }), wantField: "checkpoint.note"},
		{name: "deadline in the past", in: with(func(in *DecisionInput) { in.Deadline = now.Add(-time.Second) }), wantField: "deadline"},
		{name: "default without deadline", in: with(func(in *DecisionInput) { in.DefaultOption = 1 }), wantField: "default_option"},
		{name: "default out of range", in: with(func(in *DecisionInput) { in.Deadline = now.Add(time.Hour); in.DefaultOption = 3 }), wantField: "default_option"},
		{name: "multi-line option", in: with(func(in *DecisionInput) { in.Options[1] = "SQLite\n3. sneaky" }), wantField: "options[1]"},
		{name: "repeated option", in: with(func(in *DecisionInput) { in.Options[1] = "PostgreSQL" }), wantField: "options[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.validate(now)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("validate() = %v, want nil", err)
				}
				return
			}
			var fe *core.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Fatalf("validate() = %v, want an error on %s", err, tt.wantField)
			}
		})
	}
}

func TestRelayBody(t *testing.T) {
	asked := time.Date(2026, 7, 9, 12, 0, 0, 0, time.UTC)
	card := Card{ID: "card_1", Spec: Spec{Goal: "Pick the database"}}
	d := Decision{ID: "q_1", CardID: "card_1", Question: "Which engine?", Options: []string{"PostgreSQL", "SQLite"},
		Asked: []string{"@alice:example.org"}, AskedAt: asked, Deadline: asked.Add(6 * time.Hour), DefaultOption: 2}
	tests := []struct {
		name    string
		d       func(d Decision) Decision
		outcome bool
		want    []string
		notWant []string
	}{
		{
			name: "open, with deadline and default",
			d:    func(d Decision) Decision { return d },
			want: []string{
				"@alice:example.org: a worker needs a decision on card card_1 — Pick the database",
				"Which engine?\n\n1. PostgreSQL\n2. SQLite\n",
				"React with the option's number or reply with it.",
				"Deadline: Thu 9 Jul 2026 18:00 UTC, then option 2 (SQLite) applies.",
			},
		},
		{
			name: "open, no deadline",
			d:    func(d Decision) Decision { d.Deadline = time.Time{}; d.DefaultOption = 0; return d },
			want: []string{"1. PostgreSQL\n2. SQLite\n"}, notWant: []string{"Deadline"},
		},
		{
			name: "answered",
			d: func(d Decision) Decision {
				d.Status, d.Option, d.AnsweredBy, d.Network = DecisionAnswered, 1, "@alice:example.org", "telegram"
				d.ClosedAt = asked.Add(3*time.Hour + 12*time.Minute)
				return d
			},
			outcome: true,
			want:    []string{"1. PostgreSQL\n", "✅ Answered by @alice:example.org via telegram after 3h12m: 1. PostgreSQL"},
			notWant: []string{"React with"},
		},
		{
			name:    "defaulted",
			d:       func(d Decision) Decision { d.Status, d.Option = DecisionDefaulted, 2; return d },
			outcome: true,
			want:    []string{"No answer by the deadline; the default applies: 2. SQLite"},
		},
		{
			name:    "expired",
			d:       func(d Decision) Decision { d.Status, d.DefaultOption = DecisionExpired, 0; return d },
			outcome: true,
			want:    []string{"the question expired and card card_1 is blocked"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.d(d)
			outcome := ""
			if tt.outcome {
				outcome = outcomeLine(card, d)
			}
			body := relayBody(card, d, outcome)
			for _, w := range tt.want {
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

func TestOptionEmoji(t *testing.T) {
	tests := []struct {
		name     string
		reaction string
		want     int
		ok       bool
	}{
		{name: "one", reaction: "1️⃣", want: 1, ok: true},
		{name: "nine without variation selector", reaction: "9\u20e3", want: 9, ok: true},
		{name: "ten", reaction: "🔟", want: 10, ok: true},
		{name: "thumbs up", reaction: "👍"},
		{name: "bare digit", reaction: "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := OptionFromEmoji(tt.reaction)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("OptionFromEmoji(%q) = %d, %v; want %d, %v", tt.reaction, got, ok, tt.want, tt.ok)
			}
			if back, _ := OptionFromEmoji(OptionEmoji(got)); ok && back != got {
				t.Errorf("OptionEmoji(%d) does not round-trip", got)
			}
		})
	}
	if OptionEmoji(0) != "" || OptionEmoji(11) != "" {
		t.Errorf("OptionEmoji outside 1-10 is not empty")
	}
}
