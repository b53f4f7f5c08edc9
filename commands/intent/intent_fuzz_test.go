package intent

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// FuzzParse: whatever is typed, the parser does not panic,
// answers the same way twice, and never proposes a tripwire that fails
// validation. Before Parse's last check, the only draft the
// registry may reject is one whose URL it vets (a host not allowed).
func FuzzParse(f *testing.F) {
	for _, tt := range intentCases {
		f.Add(tt.text)
	}
	regs := map[string]*core.SourceRegistry{"jarvis": intentRegistry(), "lanes": laneRegistry()}
	f.Fuzz(func(t *testing.T, text string) {
		for name, reg := range regs {
			for _, agents := range [][]string{intentAgents, displayAgents} {
				fuzzParse(t, name, reg, agents, text)
			}
		}
	})
}

// fuzzParse checks one sentence against one registry and fleet.
func fuzzParse(t *testing.T, name string, reg *core.SourceRegistry, agents []string, text string) {
	t.Helper()
	w := Parse(text, reg, agents)
	switch w.Kind {
	case None:
		if w.Question != "" || w.Draft.Source.Kind != "" {
			t.Fatalf("%s: %q is no intent but carries %+v", name, text, w)
		}
	case Question:
		if strings.TrimSpace(w.Question) == "" {
			t.Fatalf("%s: %q asks an empty question", name, text)
		}
	case Proposal:
		if err := armable(w.Draft, "> "+text).Validate(reg); err != nil {
			t.Fatalf("%s: %q proposes %s, which fails validation: %v", name, text, intentJSON(w.Draft), err)
		}
		if w.Description == "" || strings.IndexFunc(w.Description, unicode.IsControl) >= 0 {
			t.Fatalf("%s: %q is described as %q, not one line", name, text, w.Description)
		}
	default:
		t.Fatalf("%s: %q gives kind %d", name, text, w.Kind)
	}
	if again := Parse(text, reg, agents); !reflect.DeepEqual(again, w) {
		t.Fatalf("%s: %q parses as %+v, then as %+v", name, text, w, again)
	}
	raw := parseWatch(text, reg, agents)
	if raw.Kind != Proposal {
		return
	}
	if err := armable(raw.Draft, "> "+text).Validate(reg); err != nil && !vettedURL(raw.Draft, err) {
		t.Fatalf("%s: %q builds %s, which fails validation: %v", name, text, intentJSON(raw.Draft), err)
	}
}

// vettedURL reports whether err is the registry refusing the URL of a
// url-fetch or rss source, which only the registry can know about.
func vettedURL(d tripwire.Draft, err error) bool {
	var fe *core.FieldError
	if !errors.As(err, &fe) || !strings.HasSuffix(fe.Field, "source.param") {
		return false
	}
	refs := []core.SourceRef{d.Source}
	for _, c := range d.Condition.Conditions {
		if c.Source != nil {
			refs = append(refs, *c.Source)
		}
	}
	for _, r := range refs {
		if r.Kind == "url-fetch" || r.Kind == "rss" {
			return true
		}
	}
	return false
}
