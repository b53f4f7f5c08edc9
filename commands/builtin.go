package commands

import (
	"fmt"
	"strings"
	"time"
)

var cmdPing = &Handler{
	Name: "ping",
	Help: "Check that Jarvis is listening, and how long your message took to reach it.",
	Func: func(e *Event) error {
		took := e.Proc.deps.Clock.Now().Sub(e.Sent)
		e.Reply("pong (your message took %s to reach me)", took.Round(time.Millisecond))
		return nil
	},
}

var cmdHelp = &Handler{
	Name:    "help",
	Aliases: []string{"h"},
	Args:    "[command]",
	Help:    "List the commands, or explain one.",
	Func:    help,
}

func help(e *Event) error {
	p := e.Proc
	if len(e.Args) == 0 {
		e.Reply("%s", p.helpAll(e.Admin()))
		return nil
	}
	h, path, rest := p.resolve(e.Args)
	if h == nil || len(rest) > 0 {
		e.Reply("There is no command `%s%s`, try `%shelp`.", p.cfg.Prefix, strings.Join(e.Args, " "), p.cfg.Prefix)
		return nil
	}
	e.Reply("%s", p.helpFor(h, path))
	return nil
}

// helpAll lists every command the reader may run, generated from the table.
func (p *Processor) helpAll(admin bool) string {
	var b strings.Builder
	b.WriteString("**Commands**\n\n")
	for _, h := range p.handlers {
		if h.Admin && !admin {
			continue
		}
		fmt.Fprintf(&b, "- `%s%s", p.cfg.Prefix, h.Name)
		if h.Args != "" {
			fmt.Fprintf(&b, " %s", h.Args)
		} else if len(h.Subcommands) > 0 {
			b.WriteString(" …")
		}
		fmt.Fprintf(&b, "` — %s\n", h.Help)
	}
	fmt.Fprintf(&b, "\n`%shelp <command>` explains one.", p.cfg.Prefix)
	return b.String()
}

// helpFor explains one command and its sub-commands.
func (p *Processor) helpFor(h *Handler, path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`%s%s", p.cfg.Prefix, path)
	if h.Args != "" {
		fmt.Fprintf(&b, " %s", h.Args)
	}
	fmt.Fprintf(&b, "` — %s", h.Help)
	if len(h.Aliases) > 0 {
		fmt.Fprintf(&b, " (also `%s%s`)", p.cfg.Prefix, strings.Join(h.Aliases, "`, `"+p.cfg.Prefix))
	}
	if h.Admin {
		b.WriteString(" Admins only.")
	}
	if len(h.Subcommands) > 0 {
		b.WriteString("\n\n")
		for _, s := range h.Subcommands {
			fmt.Fprintf(&b, "- `%s%s %s", p.cfg.Prefix, path, s.Name)
			if s.Args != "" {
				fmt.Fprintf(&b, " %s", s.Args)
			}
			fmt.Fprintf(&b, "` — %s\n", s.Help)
		}
	}
	return strings.TrimSpace(b.String())
}
