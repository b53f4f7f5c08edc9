// Package bridge tells who a sender is: a native Matrix user or a bridged
// puppet, from which network, who may talk to Jarvis, and what the room
// lets them do.
package bridge

import (
	"context"
	"errors"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// NetworkMatrix is the network of native Matrix users.
const NetworkMatrix = "matrix"

// Sender is who wrote a message, as Jarvis acts on it.
type Sender struct {
	// UserID is the citizen: the linked Matrix account of a puppet, or the
	// sender itself. Scopes, tokens and decisions belong to it.
	UserID string
	// Puppet is the bridged user the message came from, when it did.
	Puppet string
	// Network is where the person wrote from: "matrix", "telegram", …
	Network string
	// Relay marks a message a bridge posted on someone's behalf in relay
	// mode: shown with their name, but it authorises nothing.
	Relay bool
	// RelayedName is the name a relay-mode message carries.
	RelayedName string
}

// Trust is the trust of what the sender writes: native for a Matrix
// user writing for themselves, linked for a puppet linked to a Matrix
// account, bridged for a puppet linked to nobody, relay for a relay bot.
func (s Sender) Trust() core.Trust {
	switch {
	case s.Relay:
		return core.TrustRelay
	case s.Puppet == "":
		return core.TrustNative
	case s.UserID != s.Puppet:
		return core.TrustLinked
	}
	return core.TrustBridged
}

// Policy decides who may talk to Jarvis and who they are.
type Policy struct {
	allowed []string
	admins  []string
	cfg     Config
	links   Links
}

// Links finds the Matrix account a puppet is linked to.
type Links interface {
	LinkedAccount(ctx context.Context, puppet string) (string, error)
}

// NewPolicy builds a policy from MXID glob patterns such as "@*:example.org",
// the bridges' configuration, and the admins (bot.admins), who are Matrix
// accounts wherever they write.
func NewPolicy(allowedUsers, admins []string, cfg Config, links Links) (*Policy, error) {
	for i, pattern := range allowedUsers {
		if _, err := path.Match(pattern, ""); err != nil || !strings.HasPrefix(pattern, "@") {
			return nil, core.Invalid("bot.allowed_users", "entry %d (%q) is not an MXID glob like @*:example.org", i, pattern)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Policy{allowed: allowedUsers, admins: admins, cfg: cfg, links: links}, nil
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

// unlistedPuppet says whether userID, which no pattern of
// bridges.networks matches, is taken as a puppet of the room's bridge: the
// room's bridge state (m.bridge, uk.half-shot.bridge) names a network that
// bridges.networks does not list, and userID lives on the homeserver of
// the bridge's bot, where its appservice's namespace is (an appservice
// registers users on its own homeserver alone), and is not an admin. A
// bridge missing from the list is so not a door to native trust; a native
// account that writes in such a room is taken as bridged there until the
// bridge is listed. For a listed network the patterns decide.
func (p *Policy) unlistedPuppet(userID string, room Room) bool {
	if room.Network == "" || slices.Contains(p.admins, userID) {
		return false
	}
	for _, n := range p.cfg.Networks {
		if n.Name == room.Network {
			return false
		}
	}
	return room.BridgeBot == "" || serverOf(userID) == serverOf(room.BridgeBot)
}

// serverOf is the server name of a Matrix user ID.
func serverOf(userID string) string {
	_, server, _ := strings.Cut(userID, ":")
	return server
}

// relayPrefix is how mautrix bridges name the sender in relay mode:
// "Alice: hello" or "**Alice**: hello".
var relayPrefix = regexp.MustCompile(`^\**([^:*\n]{1,64})\**:\s`)

// NoImages reports whether the bridge of network drops images.
func (p *Policy) NoImages(network string) bool {
	for _, n := range p.cfg.Networks {
		if n.Name == network {
			return n.NoImages
		}
	}
	return false
}

// Identify classifies a sender: its network from the configured puppet
// patterns (or, failing those, the room's bridge: see unlistedPuppet), the
// account it is linked to, and whether it is a relay bot speaking for
// someone.
func (p *Policy) Identify(ctx context.Context, userID, body string, room Room) (Sender, error) {
	s := Sender{UserID: userID, Network: NetworkMatrix}
	for _, bot := range p.cfg.RelayBots {
		if bot == userID {
			s.Relay = true
			s.Network = room.Network
			if s.Network == "" {
				s.Network = "relay"
			}
			if m := relayPrefix.FindStringSubmatch(body); m != nil {
				s.RelayedName = strings.TrimSpace(m[1])
			}
			return s, nil
		}
	}
	for _, n := range p.cfg.Networks {
		if ok, _ := path.Match(n.Users, userID); ok {
			s.Network, s.Puppet = n.Name, userID
			break
		}
	}
	if s.Puppet == "" && p.unlistedPuppet(userID, room) {
		s.Network, s.Puppet = room.Network, userID
	}
	if s.Puppet == "" {
		return s, nil
	}
	account, err := p.links.LinkedAccount(ctx, userID)
	switch {
	case err == nil:
		s.UserID = account
	case !errors.Is(err, core.ErrNotFound):
		return s, err
	}
	return s, nil
}
