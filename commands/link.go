package commands

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// linkCodeTTL is how long a link code stays valid.
const linkCodeTTL = 10 * time.Minute

var cmdRatify = &Handler{
	Name: "ratify",
	Args: "<n>",
	Help: "Confirm, from your Matrix account, a held message you sent through a bridge.",
	Func: ratify,
}

// cmdLink ties a bridged puppet to its person's Matrix account: `!link`
// from one gives a one-time code, `!link CODE` from the other confirms it.
var cmdLink = &Handler{
	Name: "link",
	Args: "[code]",
	Help: "Link your bridged account to your Matrix account, so your tripwires and decisions follow you.",
	Func: link,
}

func link(e *Event) {
	ids := e.Proc.identities
	from := e.Sender
	if e.Puppet != "" {
		from = e.Puppet
	}
	if len(e.Args) == 0 {
		code, err := newLinkCode()
		if err != nil {
			e.Fail(err)
			return
		}
		err = ids.AddLinkCode(e.Ctx, core.LinkCode{Code: code, From: from, Network: e.Network, ExpiresAt: e.Proc.deps.Clock.Now().Add(linkCodeTTL)})
		if err != nil {
			e.Fail(err)
			return
		}
		other := "your bridged account (Telegram, WhatsApp, Signal, Discord)"
		if e.Puppet != "" {
			other = "your Matrix account"
		}
		e.Reply("Your link code is %s. Send `%slink %s` from %s within %d minutes.", code, e.Proc.Prefix(), code, other, int(linkCodeTTL.Minutes()))
		return
	}
	c, err := ids.TakeLinkCode(e.Ctx, e.Args[0])
	switch {
	case errors.Is(err, core.ErrNotFound):
		e.Reply("That link code is unknown or already used. Send `%slink` to get a new one.", e.Proc.Prefix())
		return
	case err != nil:
		e.Fail(err)
		return
	case e.Proc.deps.Clock.Now().After(c.ExpiresAt):
		e.Reply("That link code has expired. Send `%slink` to get a new one.", e.Proc.Prefix())
		return
	}
	// One side must be a bridged puppet, the other a native account.
	puppet, account, network := c.From, from, c.Network
	bridgedFirst, bridgedNow := c.Network != "matrix", e.Puppet != ""
	if bridgedNow {
		puppet, account, network = from, c.From, e.Network
	}
	if bridgedFirst == bridgedNow {
		e.Reply("A link ties one bridged account to one Matrix account: send the code from the other kind of account.")
		return
	}
	if err := ids.PutLink(e.Ctx, core.IdentityLink{Puppet: puppet, Account: account, Network: network, LinkedAt: e.Proc.deps.Clock.Now()}); err != nil {
		e.Fail(err)
		return
	}
	e.Reply("Linked: %s on %s is %s. Tripwires, tokens and decisions now follow you across both.", puppet, network, account)
}

// newLinkCode returns a short code that is easy to type on a phone.
func newLinkCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

func ratify(e *Event) {
	if e.Puppet != "" || e.Relay {
		e.Reply("Ratify from your Matrix account, not through a bridge.")
		return
	}
	if len(e.Args) != 1 {
		e.Reply("Say which message: `%sratify <n>`, with the number I gave when I held it.", e.Proc.Prefix())
		return
	}
	id, err := strconv.ParseInt(e.Args[0], 10, 64)
	if err != nil {
		e.Reply("`%s` is not a message number.", e.Args[0])
		return
	}
	err = e.Proc.deps.Excerpts.RatifyExcerpt(e.Ctx, id, e.Sender, e.Sender)
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("You have no held message %d.", id)
		return
	}
	if err != nil {
		e.Fail(err)
		return
	}
	e.Reply("Ratified: message %d is yours, and no longer held.", id)
}
