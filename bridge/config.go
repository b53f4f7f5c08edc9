package bridge

import (
	"fmt"
	"path"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// Config is the bridges section of the configuration.
type Config struct {
	// Networks say which puppets belong to which network, by MXID glob.
	Networks []Network
	// RelayBots are bridge bots that post other people's messages in relay
	// mode ("Alice: hello"); their messages authorise nothing.
	RelayBots []string
}

// Network is one bridged network and the puppets that belong to it.
type Network struct {
	Name string
	// Users is an MXID glob of its puppets, e.g. "@telegram_*".
	Users string
	// NoImages says the bridge drops images: its rooms get a chart's
	// words instead of the picture.
	NoImages bool
}

// Validate checks the config.
func (c Config) Validate() error {
	for i, n := range c.Networks {
		field := fmt.Sprintf("bridges.networks[%d]", i)
		if strings.TrimSpace(n.Name) == "" || n.Name == NetworkMatrix {
			return core.Invalid(field+".name", "must name the network (not %q)", n.Name)
		}
		if _, err := path.Match(n.Users, ""); err != nil || !strings.HasPrefix(n.Users, "@") {
			return core.Invalid(field+".users", "%q is not an MXID glob like @telegram_*", n.Users)
		}
	}
	for i, bot := range c.RelayBots {
		if !strings.HasPrefix(bot, "@") || !strings.Contains(bot, ":") {
			return core.Invalid(fmt.Sprintf("bridges.relay_bots[%d]", i), "%q is not a Matrix user ID", bot)
		}
	}
	return nil
}
