package commands

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core"
)

// linkCommands tie a bridged puppet to its person's Matrix account
// (`!link`, `!unlink`) and ratify what a puppet said (`!ratify`). A link
// moves what the puppet owns in the features that keep a person's things
// to the account (adopt).
type linkCommands struct {
	ids core.IdentityStore
	// bridges and searchUsers find the puppet a handle names
	// (`!link network:handle`); searchUsers may be nil.
	bridges     bridge.Config
	searchUsers func(ctx context.Context, term string) ([]bridge.User, error)
	// What a link moves, of the features there.
	tripwires *tripwireCommands
	reminders *reminderCommands
	notebook  *notebookCommands
	cards     *cardCommands
	approvals *approvalCommands
}

// maxLinkTries is how many wrong tries lock a code (it is deleted) or an
// account (for core.LinkCodeTTL).
const maxLinkTries = 5

// handlers are `!ratify`; `!link`, which ties a bridged puppet to its
// person's Matrix account (`!link @other` in a direct room gives a code
// only the named account may use, `!link CODE` from that account confirms
// it); and `!unlink`, which undoes a link from the Matrix account, after a
// ✅.
func (l *linkCommands) handlers() []*Handler {
	return []*Handler{{
		Name: "ratify",
		Args: "<n>",
		Help: "Confirm, from your Matrix account, a held message you sent through a bridge.",
		Func: l.ratify,
	}, {
		Name: "link",
		Args: "@other-account | network:handle | code",
		Help: "Link your bridged account to your Matrix account, so your tripwires and decisions follow you. Ask in a direct room with me.",
		Func: l.link,
	}, {
		Name: "unlink",
		Args: "@bridged-account",
		Help: "Undo the link of a bridged account to your Matrix account.",
		Func: l.unlink,
	}}
}

// The confirmation kinds of linking: undoing a link; linking a puppet
// that has no direct room with Jarvis, confirmed by the account; and a
// puppet's code redeemed from the account, confirmed by the account once
// it has read which puppet the code links.
const (
	confirmUnlink = "unlink"
	confirmLink   = "link"
	confirmRedeem = "link-code"
)

// confirms are the confirmations of linking.
func (l *linkCommands) confirms() []ConfirmKind {
	return []ConfirmKind{
		{Kind: confirmUnlink, TTL: core.LinkCodeTTL, Native: true, YesDoes: "unlink", NoDoes: "keep it", OnConfirm: l.confirmUnlink},
		{Kind: confirmLink, TTL: core.LinkCodeTTL, Native: true, OnConfirm: l.confirmLink},
		{Kind: confirmRedeem, TTL: core.LinkCodeTTL, Native: true, YesDoes: "link it", NoDoes: "refuse",
			OnConfirm: l.confirmLink, OnDismiss: refusedLink},
	}
}

// refusedLink is what a link refused at its confirmation says.
func refusedLink(_ *Event, p core.Pending) string {
	puppet, _, _ := strings.Cut(p.Payload, " ")
	return fmt.Sprintf("Not linked: %s does not act as you.", puppet)
}

// linkQuestion asks account to confirm that puppet, on network, is
// theirs, saying what it could do as them once linked.
func linkQuestion(puppet, network, account string) string {
	return fmt.Sprintf("This code links %s on %s to your account %s. Once linked, what it writes acts as you: "+
		"it answers the approval requests put to you, reads and changes your notes, tasks and reminders, and owns your tripwires and tokens. "+
		"Is %s yours? If someone asked you to send this code, it is not: refuse.", puppet, network, account, puppet)
}

// confirmLink links the puppet the payload names to the account that
// confirmed.
func (l *linkCommands) confirmLink(e *Event, p core.Pending) (string, error) {
	puppet, network, _ := strings.Cut(p.Payload, " ")
	now := e.Proc.deps.Clock.Now()
	err := l.ids.PutLink(e.Ctx, core.IdentityLink{Puppet: puppet, Account: p.Requester, Network: network, LinkedAt: now})
	if errors.Is(err, core.ErrDuplicate) {
		return fmt.Sprintf("Not linked: %s was linked to another account meanwhile.", puppet), nil
	}
	if err != nil {
		return "", err
	}
	moved, err := l.adopt(e, puppet, p.Requester, now)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Linked: %s on %s is %s. %s", puppet, network, p.Requester, moved), nil
}

// confirmUnlink undoes the link the payload names.
func (l *linkCommands) confirmUnlink(e *Event, p core.Pending) (string, error) {
	err := l.ids.DeleteLink(e.Ctx, p.Payload, p.Requester)
	if errors.Is(err, core.ErrNotFound) {
		return fmt.Sprintf("%s was no longer linked to you.", p.Payload), nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Unlinked: %s no longer acts as %s.", p.Payload, p.Requester), nil
}

func (l *linkCommands) link(e *Event) error {
	if len(e.Args) != 1 {
		e.Reply("In a direct room with me, name your other account: from a bridged account `%slink @you:example.org`, from Matrix `%slink @telegram_123:example.org`. "+
			"I'll give you a code to send from that account.", e.Proc.Prefix(), e.Proc.Prefix())
		return nil
	}
	if strings.HasPrefix(e.Args[0], "@") {
		return l.askLink(e, e.Args[0])
	}
	if network, handle, ok := strings.Cut(e.Args[0], ":"); ok {
		return l.linkHandle(e, network, handle)
	}
	return l.redeemLink(e, strings.ToUpper(e.Args[0]))
}

// from is who wrote: the puppet itself, not the account it is linked to.
func (e *Event) from() string {
	if e.Puppet != "" {
		return e.Puppet
	}
	return e.Sender
}

func (l *linkCommands) askLink(e *Event, other string) error {
	ids, from := l.ids, e.from()
	if !strings.Contains(other, ":") || other == from {
		e.Reply("`%s` is not another account: name it in full, like `@you:example.org`.", other)
		return nil
	}
	room, err := ids.DirectRoom(e.Ctx, from)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		return err
	}
	// A puppet with no direct room with Jarvis has nowhere private to see
	// a code: the Matrix account confirms with ✅ in its own instead.
	byConfirmation := room == "" && e.Puppet != ""
	if room != e.RoomID && !byConfirmation {
		e.Reply("I only give link codes in private: ask me in a direct room with me, not here.")
		return nil
	}
	puppet := from
	if e.Puppet == "" {
		puppet = other
	}
	if account, err := ids.LinkedAccount(e.Ctx, puppet); err == nil {
		e.Reply("%s is already linked to %s; that Matrix account must `%sunlink %s` first.", puppet, account, e.Proc.Prefix(), puppet)
		return nil
	} else if !errors.Is(err, core.ErrNotFound) {
		return err
	}
	if byConfirmation {
		return l.askLinkConfirmation(e, from, other)
	}
	code, err := newLinkCode()
	if err != nil {
		return err
	}
	err = ids.AddLinkCode(e.Ctx, core.LinkCode{Code: code, From: from, Network: e.Network, Redeemer: other,
		ExpiresAt: e.Proc.deps.Clock.Now().Add(core.LinkCodeTTL)})
	if err != nil {
		return err
	}
	e.Reply("Your link code is %s. Send `%slink %s` from %s within %d minutes; it works for that account only, once.",
		code, e.Proc.Prefix(), code, other, int(core.LinkCodeTTL.Minutes()))
	return nil
}

// askLinkConfirmation asks account, in its direct room with Jarvis, to
// confirm with ✅ that the puppet asking is theirs.
func (l *linkCommands) askLinkConfirmation(e *Event, puppet, account string) error {
	room, err := l.ids.DirectRoom(e.Ctx, account)
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("I have no direct room with you on either account to link them in private. Open one with me from %s (or from here) and ask there.", account)
		return nil
	}
	if err != nil {
		return err
	}
	err = e.askConfirmOf(confirmLink, "", account, room, bridge.Room{}, puppet+" "+e.Network, fmt.Sprintf(
		"%s on %s asks to be linked to your account, so that what it does acts as you: it would answer the approval requests put to you, "+
			"read and change your notes, tasks and reminders, and own your tripwires and tokens. Is it yours? React ✅ to link it, ❌ if it is not.",
		puppet, e.Network))
	if err != nil {
		return err
	}
	e.Reply("I asked %s to confirm in their direct room with me; nothing is linked until they do.", account)
	return nil
}

// linkHandle resolves network:handle, from Matrix, to the one puppet it
// names, and asks for a code bound to it.
func (l *linkCommands) linkHandle(e *Event, network, handle string) error {
	if e.Puppet != "" || e.Relay {
		e.Reply("Name your Matrix account instead: `%slink @you:example.org`.", e.Proc.Prefix())
		return nil
	}
	if l.searchUsers == nil {
		e.Reply("I cannot look up handles here; name the bridged account in full: `%slink @telegram_123:example.org`.", e.Proc.Prefix())
		return nil
	}
	users, err := l.searchUsers(e.Ctx, strings.TrimPrefix(handle, "@"))
	if err != nil {
		return err
	}
	puppets, known := l.bridges.Puppets(network, handle, users)
	switch {
	case !known:
		e.Reply("I know no bridged network `%s`.", network)
	case len(puppets) == 0:
		e.Reply("I know no %s account `%s`: it must have written where I am, or name it in full (`%slink @%s_123:example.org`).",
			network, handle, e.Proc.Prefix(), network)
	case len(puppets) > 1:
		e.Reply("`%s` names %d %s accounts: %s. Name the one you mean in full: `%slink %s`.",
			handle, len(puppets), network, strings.Join(puppets, ", "), e.Proc.Prefix(), puppets[0])
	default:
		return l.askLink(e, puppets[0])
	}
	return nil
}

func (l *linkCommands) redeemLink(e *Event, code string) error {
	ids, from, now := l.ids, e.from(), e.Proc.deps.Clock.Now()
	failures, err := ids.LinkFailures(e.Ctx, from, now.Add(-core.LinkCodeTTL))
	if err != nil {
		return err
	}
	if failures >= maxLinkTries {
		e.Reply("Too many wrong link codes from this account: try again in %d minutes.", int(core.LinkCodeTTL.Minutes()))
		return nil
	}
	c, err := ids.GetLinkCode(e.Ctx, code)
	switch {
	case errors.Is(err, core.ErrNotFound):
		if err := ids.AddLinkFailure(e.Ctx, from, now); err != nil {
			return err
		}
		e.Reply("That link code is unknown or already used. Ask for a new one with `%slink @your-other-account` in a direct room.", e.Proc.Prefix())
		return nil
	case err != nil:
		return err
	case now.After(c.ExpiresAt):
		if _, err := ids.TakeLinkCode(e.Ctx, code); err != nil {
			return err
		}
		e.Reply("That link code has expired. Ask for a new one with `%slink @your-other-account` in a direct room.", e.Proc.Prefix())
		return nil
	case c.Redeemer != from:
		return l.wrongLinkCode(e, code, from, now)
	}
	// One side must be a bridged puppet, the other a native account.
	puppet, account, network := c.From, from, c.Network
	bridgedFirst, bridgedNow := c.Network != bridge.NetworkMatrix, e.Puppet != ""
	if bridgedNow {
		puppet, account, network = from, c.From, e.Network
	}
	if bridgedFirst == bridgedNow {
		e.Reply("A link ties one bridged account to one Matrix account: send the code from the other kind of account.")
		return nil
	}
	if _, err := ids.TakeLinkCode(e.Ctx, code); err != nil {
		return err
	}
	if !bridgedNow {
		// The account sent a puppet's code: it may have been talked into
		// it. Nothing is linked until it has read which puppet, and what
		// that puppet could do as it, and said yes.
		return e.AskConfirm(confirmRedeem, puppet+" "+network, linkQuestion(puppet, network, account))
	}
	err = ids.PutLink(e.Ctx, core.IdentityLink{Puppet: puppet, Account: account, Network: network, LinkedAt: now})
	if errors.Is(err, core.ErrDuplicate) {
		e.Reply("%s is already linked to another account; that Matrix account must `%sunlink %s` first. Nothing changed.", puppet, e.Proc.Prefix(), puppet)
		return nil
	}
	if err != nil {
		return err
	}
	moved, err := l.adopt(e, puppet, account, now)
	if err != nil {
		return err
	}
	e.Reply("Linked: %s on %s is %s. From now on what you do from either acts as %s. %s", puppet, network, account, account, moved)
	return nil
}

// adopt gives a puppet's tripwires, tokens, reminders, notebook, open confirmations, the
// open card questions and the approval requests it is asked to the account it was just linked to, in the link's transaction, and says what
// moved.
func (l *linkCommands) adopt(e *Event, puppet, account string, now time.Time) (string, error) {
	var moved []string
	if c := l.tripwires; c != nil {
		tripwires, tokens, err := c.tw.Adopt(e.Ctx, puppet, account)
		if err != nil {
			return "", err
		}
		moved = append(moved, core.Plural(tripwires, "tripwire", "tripwires"), core.Plural(tokens, "token", "tokens"))
	}
	if c := l.reminders; c != nil {
		n, err := c.svc.Adopt(e.Ctx, puppet, account)
		if err != nil {
			return "", err
		}
		moved = append(moved, core.Plural(n, "reminder", "reminders"))
		if c.quiet != nil {
			if n, err = c.quiet.Adopt(e.Ctx, puppet, account); err != nil {
				return "", err
			}
			moved = append(moved, core.Plural(n, "held push", "held pushes"))
		}
	}
	if c := l.notebook; c != nil {
		n, err := c.svc.Adopt(e.Ctx, puppet, account)
		if err != nil {
			return "", err
		}
		moved = append(moved, core.Plural(n, "task, note or idea", "tasks, notes and ideas"))
	}
	questions, err := e.Proc.deps.Pending.MovePending(e.Ctx, puppet, account, now)
	if err != nil {
		return "", err
	}
	if c := l.cards; c != nil {
		asked, err := c.svc.Adopt(e.Ctx, puppet, account)
		if err != nil {
			return "", err
		}
		questions += asked
	}
	if c := l.approvals; c != nil {
		asked, err := c.svc.Adopt(e.Ctx, puppet, account)
		if err != nil {
			return "", err
		}
		questions += asked
	}
	moved = append(moved, core.Plural(questions, "open question", "open questions"))
	moved = slices.DeleteFunc(moved, func(s string) bool { return strings.HasPrefix(s, "0 ") })
	if len(moved) == 0 {
		return fmt.Sprintf("%s had nothing to move.", puppet), nil
	}
	return fmt.Sprintf("Moved %s from %s to %s.", strings.Join(moved, ", "), puppet, account), nil
}

// wrongLinkCode counts a code sent by an account it is not for, against
// both; the code is deleted after maxLinkTries.
func (l *linkCommands) wrongLinkCode(e *Event, code, from string, now time.Time) error {
	ids := l.ids
	if err := ids.AddLinkFailure(e.Ctx, from, now); err != nil {
		return err
	}
	tries, err := ids.MissLinkCode(e.Ctx, code)
	if err != nil {
		return err
	}
	if tries >= maxLinkTries {
		if _, err := ids.TakeLinkCode(e.Ctx, code); err != nil {
			return err
		}
	}
	e.Reply("That link code is not for this account. Nothing was linked.")
	return nil
}

func (l *linkCommands) unlink(e *Event) error {
	if e.Puppet != "" {
		e.Reply("Unlink from your Matrix account, not through a bridge.")
		return nil
	}
	if len(e.Args) != 1 || !strings.HasPrefix(e.Args[0], "@") {
		e.Reply("Say which bridged account: `%sunlink @telegram_123:example.org`.", e.Proc.Prefix())
		return nil
	}
	puppet := e.Args[0]
	account, err := l.ids.LinkedAccount(e.Ctx, puppet)
	if errors.Is(err, core.ErrNotFound) || (err == nil && account != e.Sender) {
		e.Reply("%s is not linked to you.", puppet)
		return nil
	}
	if err != nil {
		return err
	}
	return e.AskConfirm(confirmUnlink, puppet, fmt.Sprintf("Unlink %s from %s?", puppet, e.Sender))
}

// newLinkCode returns 8 base32 characters, 40 bits from crypto/rand.
func newLinkCode() (string, error) {
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base32.StdEncoding.EncodeToString(b), nil
}

func (l *linkCommands) ratify(e *Event) error {
	if e.Puppet != "" || e.Relay {
		e.Reply("Ratify from your Matrix account, not through a bridge.")
		return nil
	}
	if len(e.Args) != 1 {
		e.Reply("Say which message: `%sratify <n>`, with the number I gave when I held it.", e.Proc.Prefix())
		return nil
	}
	id, err := strconv.ParseInt(e.Args[0], 10, 64)
	if err != nil {
		e.Reply("`%s` is not a message number.", e.Args[0])
		return nil
	}
	err = e.Proc.deps.Excerpts.RatifyExcerpt(e.Ctx, id, e.Sender, e.Sender)
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("You have no held message %d.", id)
		return nil
	}
	if err != nil {
		return err
	}
	e.Reply("Ratified: message %d is yours, and no longer held.", id)
	return nil
}
