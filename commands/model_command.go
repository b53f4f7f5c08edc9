package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/converse"
)

// proposableCommands are the commands a model may propose as they are
// typed: run on the person's ✅, as the person, through the one table.
var proposableCommands = []string{"silence", "task add"}

const (
	confirmCommand = "command"
	// proposedCommandTTL is how long a proposed command waits for ✅.
	proposedCommandTTL = time.Hour
)

// commandConfirm is the ✅ that runs a proposed command.
func (p *Processor) commandConfirm() ConfirmKind {
	return ConfirmKind{Kind: confirmCommand, TTL: proposedCommandTTL, OnConfirm: p.runProposed, YesDoes: "run it", NoDoes: "dismiss"}
}

// proposeCommandTool offers the commands of proposableCommands this
// processor has.
func (t *modelTurn) proposeCommandTool() (converse.Tool, bool) {
	var have []string
	for _, name := range proposableCommands {
		if h, path, _ := t.p.resolve(strings.Fields(name)); h != nil && path == name {
			have = append(have, t.p.cfg.Prefix+name+" "+h.Args)
		}
	}
	if len(have) == 0 {
		return converse.Tool{}, false
	}
	return converse.Tool{Name: "propose_command",
		Description: "Propose one of these commands, as the person would type it, for them to run with ✅ (with their own rights; this runs nothing): " +
			strings.Join(have, "; ") + ".",
		Parameters: object(map[string]any{"command": str("the command line, e.g. " + t.p.cfg.Prefix + "silence BACKUP for 2h --because \"maintenance\"")}, "command"),
		Call:       t.proposeCommand}, true
}

// proposeCommand checks that the command is one a model may propose and
// that the person may run it, with the table's own refusals, and plans
// the question; the ✅ runs it.
func (t *modelTurn) proposeCommand(ctx context.Context, raw json.RawMessage) (converse.Result, error) {
	if len(t.plans) >= maxModelProposals {
		return refusedResult(fmt.Sprintf("at most %d proposals in one answer", maxModelProposals))
	}
	var args struct{ Command string }
	if err := json.Unmarshal(raw, &args); err != nil {
		return refusedResult("the arguments do not match the tool's schema: " + err.Error())
	}
	line := strings.TrimPrefix(strings.TrimSpace(args.Command), t.p.cfg.Prefix)
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return refusedResult("name the command")
	}
	h, path, rest := t.p.resolve(fields)
	if h == nil || !slices.Contains(proposableCommands, path) {
		return refusedResult(fmt.Sprintf("I propose only %s, not `%s%s`", strings.Join(proposableCommands, " and "), t.p.cfg.Prefix, path))
	}
	if len(rest) == 0 {
		return refusedResult(fmt.Sprintf("`%s%s` needs its arguments: %s", t.p.cfg.Prefix, path, h.Args))
	}
	e := &Event{Message: t.msg, Ctx: ctx, Proc: t.p, Handler: h, Command: path, Args: rest, RawArgs: rawAfter(line, len(fields)-len(rest))}
	if why, err := t.p.checkProposal(e); why != "" || err != nil {
		if err != nil {
			return converse.Result{}, err
		}
		return refusedResult(why)
	}
	untrusted := append([]string(nil), t.untrusted...)
	t.plans = append(t.plans, func(e *Event) error {
		text := fmt.Sprintf("Shall I run this for you? %s", core.CodeSpan(t.p.cfg.Prefix+line))
		if len(untrusted) > 0 {
			text += "\n\n" + untrustedMark(untrusted)
		}
		return e.AskConfirm(confirmCommand, line, text)
	})
	return converse.Result{Data: map[string]string{"proposed": t.p.cfg.Prefix + line,
		"note": "shown to the person with ✅; nothing runs unless they tap it"}, Source: "jarvis"}, nil
}

// runProposed runs a proposed command on its ✅: as the person who
// tapped (the one who asked), through the table, with every check a
// typed command has; its replies answer the tap.
func (p *Processor) runProposed(e *Event, pending core.Pending) (string, error) {
	fields := strings.Fields(pending.Payload)
	if len(fields) == 0 {
		return "", fmt.Errorf("proposed command %s is empty", pending.Key)
	}
	h, path, rest := p.resolve(fields)
	if !slices.Contains(proposableCommands, path) {
		return "", fmt.Errorf("proposed command %q is not one a model may propose", path)
	}
	e.Handler, e.Command, e.Args, e.RawArgs = h, path, rest, rawAfter(pending.Payload, len(fields)-len(rest))
	if err := p.run(e); err != nil {
		return "", err
	}
	return fmt.Sprintf("Ran %s, as %s confirmed.", core.CodeSpan(p.cfg.Prefix+pending.Payload), e.Sender), nil
}

// checkProposal checks a command proposed for e's sender as the table
// would check it typed, without running it: the table's authority check,
// then the command's own Check (its parser and its authority checks).
// why is what the grammar would answer, "" when the command would run.
func (p *Processor) checkProposal(e *Event) (why string, err error) {
	if err := p.mayRun(e); err != nil {
		return refusalText(err)
	}
	if e.Handler.Check == nil {
		return "", nil
	}
	var said []string
	e.checking = &said
	defer func() { e.checking = nil }()
	if err := e.Handler.Check(e); err != nil {
		return refusalText(err)
	}
	return strings.Join(said, "\n"), nil
}

// refusalText is a refusal's words; any other error is returned.
func refusalText(err error) (string, error) {
	var r *refusedError
	if errors.As(err, &r) {
		return r.reply, nil
	}
	return "", err
}
