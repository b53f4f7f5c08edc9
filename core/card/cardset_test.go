package card

import (
	"errors"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
)

func testCard(ref string, deps ...string) Input {
	return Input{Ref: ref, Spec: Spec{Goal: "Do " + ref, Acceptance: []string{"it works"}, Priority: P2, DependsOn: deps}}
}

func TestCardSetInputValidate(t *testing.T) {
	tests := []struct {
		name      string
		in        SetInput
		wantField string // "" means valid
		wantText  string
	}{
		{name: "chain", in: SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("a"), testCard("b", "a"), testCard("c", "a", "b")}}},
		{name: "dependency outside the set is checked later", in: SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("a", "card_0123")}}},
		{
			name:      "two-card cycle",
			in:        SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("a", "b"), testCard("b", "a")}},
			wantField: "cards[1].depends_on", wantText: "dependency cycle: a → b → a",
		},
		{
			name:      "three-card cycle behind a chain",
			in:        SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("x"), testCard("a", "x", "c"), testCard("b", "a"), testCard("c", "b")}},
			wantField: "cards[2].depends_on", wantText: "a → c → b → a",
		},
		{
			name:      "self dependency",
			in:        SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("a", "a")}},
			wantField: "cards[0].depends_on[0]", wantText: "itself",
		},
		{
			name:      "duplicate ref",
			in:        SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("a"), testCard("a")}},
			wantField: "cards[1].ref",
		},
		{
			name:      "ref that looks like a card id",
			in:        SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("card_x")}},
			wantField: "cards[0].ref",
		},
		{name: "missing key", in: SetInput{Author: MainAgent, Cards: []Input{testCard("a")}}, wantField: "idempotency_key"},
		{name: "missing author", in: SetInput{Key: "k", Cards: []Input{testCard("a")}}, wantField: "author"},
		{name: "empty set", in: SetInput{Key: "k", Author: MainAgent}, wantField: "cards"},
		{
			name:      "bad priority",
			in:        SetInput{Key: "k", Author: MainAgent, Cards: []Input{{Spec: Spec{Goal: "g", Acceptance: []string{"a"}, Priority: "P9"}}}},
			wantField: "cards[0].priority",
		},
		{
			name:      "no acceptance criteria",
			in:        SetInput{Key: "k", Author: MainAgent, Cards: []Input{{Spec: Spec{Goal: "g", Priority: P1}}}},
			wantField: "cards[0].acceptance",
		},
		{
			name:      "blank criterion",
			in:        SetInput{Key: "k", Author: MainAgent, Cards: []Input{{Spec: Spec{Goal: "g", Acceptance: []string{"ok", " "}, Priority: P1}}}},
			wantField: "cards[0].acceptance[1]",
		},
		{
			name:      "dependency listed twice",
			in:        SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("a"), testCard("b", "a", "a")}},
			wantField: "cards[1].depends_on[1]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.validate()
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
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not say %q", err, tt.wantText)
			}
		})
	}
}

func TestCardSetFingerprint(t *testing.T) {
	base := SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("a"), testCard("b", "a")}}
	same := SetInput{Key: "other key", Author: MainAgent, Cards: []Input{testCard("a"), testCard("b", "a")}}
	changed := SetInput{Key: "k", Author: MainAgent, Cards: []Input{testCard("a"), testCard("b")}}
	fp := func(in SetInput) string {
		s, err := in.fingerprint()
		if err != nil {
			t.Fatalf("fingerprint: %v", err)
		}
		return s
	}
	if fp(base) != fp(same) {
		t.Errorf("the same cards give different fingerprints")
	}
	if fp(base) == fp(changed) {
		t.Errorf("different cards give the same fingerprint")
	}
}
