// Package bridge tells who a sender is: a native Matrix user or a bridged
// puppet, from which network, and whether they may talk to Jarvis.
package bridge

import (
	"path"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// NetworkMatrix is the network of native Matrix users.
const NetworkMatrix = "matrix"

// Sender is who wrote a message.
type Sender struct {
	UserID  string
	Network string
}

// Policy decides who may talk to Jarvis.
type Policy struct {
	allowed []string
}

// NewPolicy builds a policy from MXID glob patterns such as "@*:example.org".
func NewPolicy(allowedUsers []string) (*Policy, error) {
	for i, pattern := range allowedUsers {
		if _, err := path.Match(pattern, ""); err != nil || !strings.HasPrefix(pattern, "@") {
			return nil, core.Invalid("bot.allowed_users", "entry %d (%q) is not an MXID glob like @*:example.org", i, pattern)
		}
	}
	return &Policy{allowed: allowedUsers}, nil
}

// Allowed reports whether the user matches one of the allowed patterns.
func (p *Policy) Allowed(userID string) bool {
	for _, pattern := range p.allowed {
		if ok, _ := path.Match(pattern, userID); ok {
			return true
		}
	}
	return false
}

// Identify classifies a sender. Until bridges are configured every sender
// is a native Matrix user.
func (p *Policy) Identify(userID string) Sender {
	return Sender{UserID: userID, Network: NetworkMatrix}
}
