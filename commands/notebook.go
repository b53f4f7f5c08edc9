package commands

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/commands/intent"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/reminder"
)

// notebookSentences are what, said to Jarvis, becomes a notebook command:
// the command, and whether the words after the match are its argument.
var notebookSentences = []struct {
	re      *regexp.Regexp
	command string
}{
	{regexp.MustCompile(`(?i)^(please\s+)?(add|new|create)\s+(a\s+)?(task|to-?do)\s*[:,-]?\s+`), "task add"},
	{regexp.MustCompile(`(?i)^(task|to-?do)\s*:\s*`), "task add"},
	{regexp.MustCompile(`(?i)^(what are|show|list)\s+(me\s+)?my\s+(tasks|to-?dos)\??$`), "task list"},
	{regexp.MustCompile(`(?i)^what('s| is)\s+on\s+my\s+(list|plate|to-?do list)\??$`), "task list"},
	{regexp.MustCompile(`(?i)^(please\s+)?(add|take|make)\s+(a\s+)?note\s*[:,-]?\s+(that\s+)?`), "note add"},
	{regexp.MustCompile(`(?i)^(note|remember)\s*(:|that\s+)\s*`), "note add"},
	{regexp.MustCompile(`(?i)^(find|search|look up|show)\s+(me\s+)?my\s+notes?\s+(about|on|for|with)\s+`), "note find"},
	{regexp.MustCompile(`(?i)^what\s+(did\s+i\s+note|notes\s+do\s+i\s+have)\s+(about|on)\s+`), "note find"},
	{regexp.MustCompile(`(?i)^(what are|show|list)\s+(me\s+)?my\s+notes\??$`), "note list"},
	{regexp.MustCompile(`(?i)^(i\s+have\s+an\s+|new\s+|add\s+(an\s+)?)?idea\s*[:,-]\s*`), "idea add"},
	{regexp.MustCompile(`(?i)^(what are|show|list)\s+(me\s+)?my\s+ideas\??$`), "idea list"},
}

// notebookIntent turns sentences said to Jarvis into notebook commands.
func notebookIntent(text string) (string, []string, bool) {
	t := strings.TrimSpace(text)
	for _, s := range notebookSentences {
		if loc := s.re.FindStringIndex(t); loc != nil {
			return s.command, strings.Fields(t[loc[1]:]), true
		}
	}
	return "", nil, false
}

// notebookCommands are what the notebook commands act on; reminders, when
// there, remind of dated tasks.
type notebookCommands struct {
	svc       *notebook.Service
	reminders *reminderCommands
}

// handlers are the notebook's commands, personal-assistant work that
// Jarvis does itself rather than delegate: what each person keeps, shown
// to them only. Said to Jarvis, "add a task: …", "note: …", "idea: …",
// "what are my tasks?" and "find my note about …" become them.
func (c *notebookCommands) handlers() []*Handler {
	return []*Handler{
		{Name: "task", Aliases: []string{"tasks", "todo"}, Help: "Your tasks; one with a date reminds you of it.", Func: c.taskList,
			Subcommands: []*Handler{
				{Name: "add", Args: "<what> [by|on <day>] [at <time>]", Help: "Add a task: `!task add renew the certificate by Friday`.", Func: c.taskAdd,
					Check: c.taskCheck},
				{Name: "list", Aliases: []string{"ls"}, Help: "Your open tasks, soonest due first.", Func: c.taskList},
				{Name: "done", Args: "<id>", Help: "Mark a task done.", Func: c.taskDone},
			}},
		{Name: "note", Aliases: []string{"notes"}, Help: "Your notes, searched in full text.", Func: c.noteList,
			Subcommands: []*Handler{
				{Name: "add", Args: "<text>", Help: "Keep a note: `!note add the staging DB password rotates monthly`.", Func: c.noteAdd},
				{Name: "find", Aliases: []string{"search"}, Args: "<words>", Help: "Your notes that hold every word.", Func: c.noteFind},
				{Name: "list", Aliases: []string{"ls"}, Help: "Your newest notes.", Func: c.noteList},
			}},
		{Name: "idea", Aliases: []string{"ideas"}, Help: "Your ideas.", Func: c.ideaList,
			Subcommands: []*Handler{
				{Name: "add", Args: "<text>", Help: "Keep an idea: `!idea add let agents vote on priorities`.", Func: c.ideaAdd},
				{Name: "list", Aliases: []string{"ls"}, Help: "Your newest ideas.", Func: c.ideaList},
			}},
	}
}

func (c *notebookCommands) taskAdd(e *Event) error {
	p := e.Proc
	text, due, ok := c.readTask(e)
	if !ok {
		return nil
	}
	loc, now := p.zone(e), p.deps.Clock.Now()
	t, err := c.svc.Add(e.Ctx, e.Sender, notebook.Task, text, due)
	if err != nil {
		return notebookNotAdded(e, err)
	}
	if due.IsZero() {
		e.Private("Task %d added: %s. `%stask done %d` when it is done.", t.ID, remindQuote(t.Text), p.Prefix(), t.ID)
		return nil
	}
	when := reminder.When(due, now, loc)
	if c.reminders != nil {
		if _, err := c.reminders.svc.Add(e.Ctx, reminder.Reminder{Owner: e.Sender, Text: "Task due: " + t.Text, Due: due, Zone: loc.String()}); err != nil {
			return err
		}
		e.Private("Task %d added, due %s: %s. I'll remind you then. `%stask done %d` when it is done.", t.ID, when, remindQuote(t.Text), p.Prefix(), t.ID)
		return nil
	}
	e.Private("Task %d added, due %s: %s.", t.ID, when, remindQuote(t.Text))
	return nil
}

// Private answers what only the sender may read: in a direct room as a
// reply, anywhere else in the sender's direct room, with a word in the
// room that it went there.
func (e *Event) Private(format string, args ...any) {
	if e.Room.Direct {
		e.Reply(format, args...)
		return
	}
	e.Send(core.Notice{ToUser: e.Sender, Kind: core.NoticeMessage, Body: fmt.Sprintf(format, args...)})
	e.Reply("I answered in our direct room: only you see what you keep with me.")
}

// readTask reads `!task add`'s arguments: the task and its due time,
// when it says one. ok is false when it answered that there is none.
func (c *notebookCommands) readTask(e *Event) (text string, due time.Time, ok bool) {
	if strings.TrimSpace(e.RawArgs) == "" {
		e.Reply("Which task? `%stask add renew the certificate by Friday`.", e.Proc.Prefix())
		return "", time.Time{}, false
	}
	text = e.RawArgs
	if w := intent.Reminder(e.RawArgs, e.Proc.deps.Clock.Now(), e.Proc.zone(e)); w.What != "" && !w.At.IsZero() && w.Every == "" {
		text, due = w.What, w.At
	}
	return text, due, true
}

// taskCheck is `!task add`'s Check: the task read and checked as taskAdd
// adds it, nothing kept.
func (c *notebookCommands) taskCheck(e *Event) error {
	text, _, ok := c.readTask(e)
	if !ok {
		return nil
	}
	return notebookNotAdded(e, c.svc.CheckAdd(e.Ctx, e.Sender, notebook.Task, text))
}

// notebookNotAdded answers a failed Add: a refusal says why; any other
// error is returned.
func notebookNotAdded(e *Event, err error) error {
	if why, ok := refusal(err); ok {
		e.Reply("Not kept: %s.", why)
		return nil
	}
	return err
}

func (c *notebookCommands) taskList(e *Event) error {
	p := e.Proc
	tasks, err := c.svc.List(e.Ctx, e.Sender, notebook.Task)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		e.Reply("You have no open tasks. `%stask add <what>` adds one.", p.Prefix())
		return nil
	}
	loc, now := p.zone(e), p.deps.Clock.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "**Your tasks** (%d open):\n\n", len(tasks))
	for _, t := range tasks {
		due := ""
		if !t.Due.IsZero() {
			due = " — due " + reminder.When(t.Due, now, loc)
		}
		fmt.Fprintf(&b, "- `%d` %s%s\n", t.ID, core.EscapeMarkdown(t.Text), due)
	}
	fmt.Fprintf(&b, "\n`%stask done <id>` marks one done.", p.Prefix())
	e.Private("%s", b.String())
	return nil
}

func (c *notebookCommands) taskDone(e *Event) error {
	p := e.Proc
	id, ok := notebookID(e, "task done")
	if !ok {
		return nil
	}
	t, err := c.svc.Finish(e.Ctx, e.Sender, id)
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("You have no open task %d; `%stask list` shows yours.", id, p.Prefix())
		return nil
	}
	if err != nil {
		return err
	}
	e.Private("Done: %s.", remindQuote(t.Text))
	return nil
}

// notebookID reads the one id argument of a command.
func notebookID(e *Event, command string) (int64, bool) {
	if len(e.Args) == 1 {
		if id, err := strconv.ParseInt(strings.TrimPrefix(e.Args[0], "#"), 10, 64); err == nil {
			return id, true
		}
	}
	e.Reply("Which one? `%s%s <id>`.", e.Proc.Prefix(), command)
	return 0, false
}

func (c *notebookCommands) noteAdd(e *Event) error { return c.add(e, notebook.Note, "Noted") }
func (c *notebookCommands) ideaAdd(e *Event) error { return c.add(e, notebook.Idea, "Idea kept") }

func (c *notebookCommands) add(e *Event, kind notebook.Kind, done string) error {
	if strings.TrimSpace(e.RawArgs) == "" {
		e.Reply("What should I keep? `%s%s add <text>`.", e.Proc.Prefix(), kind)
		return nil
	}
	n, err := c.svc.Add(e.Ctx, e.Sender, kind, e.RawArgs, time.Time{})
	if err != nil {
		return notebookNotAdded(e, err)
	}
	e.Private("%s (%d): %s. Only you see it; `%s%s list` shows yours.", done, n.ID, remindQuote(n.Text), e.Proc.Prefix(), kind)
	return nil
}

func (c *notebookCommands) noteList(e *Event) error { return c.show(e, notebook.Note, nil, false) }
func (c *notebookCommands) ideaList(e *Event) error { return c.show(e, notebook.Idea, nil, false) }

func (c *notebookCommands) noteFind(e *Event) error {
	found, err := c.svc.Find(e.Ctx, e.Sender, e.RawArgs)
	if why, ok := refusal(err); ok {
		e.Reply("Find what? %s: `%snote find <words>`.", core.UpperFirst(why), e.Proc.Prefix())
		return nil
	}
	if err != nil {
		return err
	}
	return c.show(e, notebook.Note, found, true)
}

// show lists the sender's newest notes or ideas, or the notes a
// search found.
func (c *notebookCommands) show(e *Event, kind notebook.Kind, found []notebook.Entry, search bool) error {
	entries, title := found, "Your notes that hold "+remindQuote(strings.Join(notebook.Words(e.RawArgs), " "))
	if !search {
		var err error
		if entries, err = c.svc.List(e.Ctx, e.Sender, kind); err != nil {
			return err
		}
		title = "Your newest " + string(kind) + "s"
	}
	if len(entries) == 0 {
		if search {
			e.Reply("None of your notes holds %s.", remindQuote(strings.Join(notebook.Words(e.RawArgs), " ")))
			return nil
		}
		e.Reply("You have no %ss yet. `%s%s add <text>` keeps one.", kind, e.Proc.Prefix(), kind)
		return nil
	}
	loc := e.Proc.zone(e)
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**:\n\n", title)
	for _, n := range entries {
		fmt.Fprintf(&b, "- `%d` %s: %s\n", n.ID, n.CreatedAt.In(loc).Format("2 Jan 2006"), core.EscapeMarkdown(n.Text))
	}
	e.Private("%s", b.String())
	return nil
}
