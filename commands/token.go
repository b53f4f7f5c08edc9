package commands

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// tokenCommands are `!sys token issue|list|revoke`: the HTTP API's tokens,
// one per agent and per role, handed out only in an admin's direct room.
type tokenCommands struct {
	svc *credential.Service
}

// handler is `!sys token`, a verb of `!sys`.
func (t *tokenCommands) handler() *Handler {
	return &Handler{
		Name: "token",
		Help: "The HTTP API's tokens (one per agent and per role), only in our direct chat: `sys token issue agent <name>|supervisor|orchestrator|receiver`, `sys token list`, `sys token revoke <id>`.",
		Func: func(e *Event) error {
			e.Reply("Say `%ssys token issue agent <name>`, `issue supervisor`, `issue orchestrator`, `list` or `revoke <id>`, in our direct chat.", e.Proc.Prefix())
			return nil
		},
		Subcommands: []*Handler{
			{Name: "issue", Args: "agent <name> | supervisor | orchestrator | receiver", Help: "Issue a token, shown once.", Func: t.issue},
			{Name: "list", Help: "Every token: id, role, agent, created, last used (never the secret).", Func: t.list},
			{Name: "revoke", Args: "<id>", Help: "Revoke a token; it stops working within seconds.", Func: t.revoke},
		},
	}
}

// inDirectRoom says whether the event comes from the sender's direct room
// with Jarvis, on Matrix itself; otherwise it answers why a token is not
// handled here.
func inDirectRoom(e *Event) (bool, error) {
	prefix := e.Proc.Prefix()
	if e.Puppet != "" {
		e.Reply("A token is a password, so I handle them only in our direct chat on Matrix, never through a bridge. Ask me there with `%ssys token`.", prefix)
		return false, nil
	}
	direct, err := directRoomOf(e)
	if err != nil {
		return false, err
	}
	if direct != e.RoomID {
		e.Reply("A token is a password, so I handle them only in our direct chat, never in a shared room where others read along. Say `%ssys token` there.", prefix)
		return false, nil
	}
	return true, nil
}

func (t *tokenCommands) issue(e *Event) error {
	if ok, err := inDirectRoom(e); !ok || err != nil {
		return err
	}
	prefix := e.Proc.Prefix()
	if len(e.Args) < 1 || len(e.Args) > 2 {
		e.Reply("Issue which token? `%ssys token issue agent <name>`, `%ssys token issue supervisor` or `%ssys token issue orchestrator`.", prefix, prefix, prefix)
		return nil
	}
	role, agent := credential.Role(strings.ToLower(e.Args[0])), ""
	if len(e.Args) == 2 {
		agent = e.Args[1]
	}
	token, c, err := t.svc.Issue(e.Ctx, role, agent)
	var fe *core.FieldError
	if errors.As(err, &fe) {
		e.Reply("No token issued: %s %s.", fe.Field, core.EscapeMarkdown(fe.Reason))
		return nil
	}
	if err != nil {
		return err
	}
	who := string(c.Role)
	if c.Agent != "" {
		who += " " + core.EscapeMarkdown(c.Agent)
	}
	e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeMessage, TargetEvent: e.EventID, Secret: true,
		Body: fmt.Sprintf("The %s token, shown this once (I keep only its hash):\n\n`%s`\n\n"+
			"Its holder sends it with every request to Jarvis's API: `Authorization: Bearer <token>`.\n\n"+
			"Its ID is `%s`: `%ssys token revoke %s` turns it off.", who, token, c.ID, prefix, c.ID)})
	return nil
}

func (t *tokenCommands) list(e *Event) error {
	if ok, err := inDirectRoom(e); !ok || err != nil {
		return err
	}
	list, err := t.svc.List(e.Ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		e.Reply("There are no API tokens. `%ssys token issue agent <name>` issues one.", e.Proc.Prefix())
		return nil
	}
	var b strings.Builder
	b.WriteString("**API tokens** (their secret is never shown again)\n\n")
	for _, c := range list {
		fmt.Fprintf(&b, "- `%s` %s", c.ID, c.Role)
		if c.Agent != "" {
			fmt.Fprintf(&b, " for %s", core.EscapeMarkdown(c.Agent))
		}
		fmt.Fprintf(&b, ", issued %s, ", breakerTime(c.CreatedAt))
		if c.LastUsedAt.IsZero() {
			b.WriteString("never used\n")
		} else {
			fmt.Fprintf(&b, "last used %s\n", breakerTime(c.LastUsedAt))
		}
	}
	e.Reply("%s", b.String())
	return nil
}

func (t *tokenCommands) revoke(e *Event) error {
	if ok, err := inDirectRoom(e); !ok || err != nil {
		return err
	}
	prefix := e.Proc.Prefix()
	if len(e.Args) != 1 {
		e.Reply("Which token? `%ssys token revoke <id>`; `%ssys token list` shows them.", prefix, prefix)
		return nil
	}
	id := strings.Trim(e.Args[0], "`")
	err := t.svc.Revoke(e.Ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("There is no token %s. `%ssys token list` shows them.", twCode(id), prefix)
		return nil
	}
	if err != nil {
		return err
	}
	e.Reply("Token `%s` is revoked: requests bearing it are refused within %s.", id, credential.CacheTTL)
	return nil
}
