package bridge

import (
	"errors"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
)

func TestPolicyAllowed(t *testing.T) {
	p, err := NewPolicy([]string{"@*:example.org", "@bob:other.org"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		user string
		want bool
	}{
		{"@alice:example.org", true},
		{"@bob:other.org", true},
		{"@eve:other.org", false},
		{"@alice:example.org.evil", false},
	} {
		if got := p.Allowed(tt.user); got != tt.want {
			t.Errorf("Allowed(%s) = %v, want %v", tt.user, got, tt.want)
		}
	}
}

func TestPolicyRejectsBadPatterns(t *testing.T) {
	for _, pattern := range []string{"*", "alice", "@[:x"} {
		_, err := NewPolicy([]string{pattern})
		var fe *core.FieldError
		if !errors.As(err, &fe) || fe.Field != "bot.allowed_users" {
			t.Errorf("NewPolicy(%q) = %v, want an error naming bot.allowed_users", pattern, err)
		}
	}
}
