package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/markdown"
)

// noticeBatch is how many notices one look at the outbox reads.
const noticeBatch = 200

// roomNotices are the notices of the dedicated room that a console shows
// too, by key: halts and every change of them, needs-decision relays and
// their outcomes, and the wake router's notices.
var roomNotices = []string{"breaker:", "decision:", "wake:"}

// Store is what a console keeps in the store and reads back: its own
// rows, written whether or not its process holds the lease.
type Store interface {
	AddInput(ctx context.Context, in core.Input) (int64, error)
	Input(ctx context.Context, seq int64) (core.Input, error)
	DeleteInput(ctx context.Context, seq int64) error
	Cursor(ctx context.Context, user string) (seq int64, found bool, err error)
	SetCursor(ctx context.Context, user string, seq int64, at time.Time) error
}

// Notices reads the outbox.
type Notices interface {
	// NoticeCursor and NoticesSince read past a cursor kept in the store.
	NoticeCursor(ctx context.Context) (int64, error)
	NoticesSince(ctx context.Context, cursor int64) ([]core.OutboxEntry, int64, error)
	// NoticesAfter and LastSeq read notices drawn after a seq.
	NoticesAfter(ctx context.Context, seq int64, limit int) ([]core.OutboxEntry, error)
	LastSeq(ctx context.Context) (int64, error)
}

// Config is one console session's settings.
type Config struct {
	// User is the operating-system user at the terminal.
	User string
	// Operator is the Matrix account whose trip pushes the console shows
	// too; empty for none.
	Operator string
	// Style shows bold and italics with the terminal's escape sequences.
	Style bool
}

// Deps are what a session works with.
type Deps struct {
	Store   Store
	Notices Notices
	Clock   core.Clock
	// Kick, when set, tells the relay in this process that a line waits.
	Kick func()
	// Describe, when set, says in words what a chart notice shows, as a
	// room whose bridge drops images gets it; without it the console
	// leaves charts to the Matrix room.
	Describe func(ctx context.Context, request string) (string, error)
}

// Session is one person's console: what they type goes to the store for
// the lease holder to act on, and what Jarvis says to them, or says in
// the room where they would see it, is shown once, from their cursor over
// the outbox.
type Session struct {
	cfg  Config
	deps Deps
	me   string
	out  io.Writer

	mu     sync.Mutex
	cursor int64
	// past are the notices the last read listed: on PostgreSQL the next
	// read lists again those of transactions at or after the cursor.
	past map[int64]bool
	// asked are the questions shown and not answered yet, newest last.
	asked []question
}

// question is a notice that waits for the person's answer.
type question struct {
	key string
	// options: answered with an option's number, not yes or no.
	options bool
}

// NewSession returns a session that writes to out.
func NewSession(cfg Config, deps Deps, out io.Writer) *Session {
	return &Session{cfg: cfg, deps: deps, me: Me(cfg.User), out: out}
}

// Open starts reading where the user's cursor stands. A user who never
// opened a console starts at the newest notice; one who did is shown,
// marked, what arrived while the console was closed.
func (s *Session) Open(ctx context.Context) error {
	seq, found, err := s.deps.Store.Cursor(ctx, s.cfg.User)
	if err != nil {
		return fmt.Errorf("read the console cursor: %w", err)
	}
	if !found {
		if seq, err = s.deps.Notices.NoticeCursor(ctx); err != nil {
			return fmt.Errorf("read the outbox: %w", err)
		}
		s.cursor = seq
		return s.deps.Store.SetCursor(ctx, s.cfg.User, seq, s.deps.Clock.Now())
	}
	s.mu.Lock()
	s.cursor = seq
	s.mu.Unlock()
	var missed []core.OutboxEntry
	if err := s.read(ctx, func(e core.OutboxEntry) { missed = append(missed, e) }); err != nil {
		return err
	}
	if len(missed) == 0 {
		return nil
	}
	fmt.Fprintf(s.out, "── While the console was closed: %s ──\n", core.Plural(len(missed), "notice", "notices"))
	for _, e := range missed {
		s.show(ctx, e, true)
	}
	fmt.Fprintln(s.out, "── Up to now ──")
	return nil
}

// Poll shows what arrived since the last look, and moves the cursor past
// it.
func (s *Session) Poll(ctx context.Context) error {
	return s.read(ctx, func(e core.OutboxEntry) { s.show(ctx, e, false) })
}

// read hands fn each notice after the cursor that this console shows and
// has not shown, and keeps the cursor past everything read. The store
// keeps it only when there was something new to read: on PostgreSQL the
// cursor moves with every transaction.
func (s *Session) read(ctx context.Context, fn func(core.OutboxEntry)) error {
	s.mu.Lock()
	cursor, past := s.cursor, s.past
	s.mu.Unlock()
	entries, next, err := s.deps.Notices.NoticesSince(ctx, cursor)
	if err != nil {
		return fmt.Errorf("read the outbox: %w", err)
	}
	read := make(map[int64]bool, len(entries))
	fresh := false
	for _, e := range entries {
		read[e.Seq] = true
		if past[e.Seq] {
			continue
		}
		fresh = true
		if s.shows(e) {
			fn(e)
		}
	}
	s.mu.Lock()
	s.cursor, s.past = next, read
	s.mu.Unlock()
	if !fresh {
		return nil
	}
	return s.deps.Store.SetCursor(ctx, s.cfg.User, next, s.deps.Clock.Now())
}

// shows reports whether this console shows a notice: what is said to its
// user, in the workspace's console room, the operator's trip pushes, and
// the dedicated room's notices a person acts on. Reactions are the
// Matrix room's, and so are charts unless the console can say them in
// words.
func (s *Session) shows(e core.OutboxEntry) bool {
	switch {
	case !s.readable(e):
		return false
	case e.RoomID == s.me || e.ToUser == s.me || e.RoomID == Room:
		return true
	case strings.HasPrefix(e.RoomID, core.ConsolePrefix) || strings.HasPrefix(e.ToUser, core.ConsolePrefix):
		// Another console user's.
		return false
	case s.cfg.Operator != "" && e.ToUser == s.cfg.Operator && strings.HasPrefix(e.Key, "trip:"):
		return true
	}
	for _, prefix := range roomNotices {
		if strings.HasPrefix(e.Key, prefix) {
			return true
		}
	}
	return false
}

// readable reports whether the console can show a notice of e's kind.
func (s *Session) readable(e core.OutboxEntry) bool {
	return e.Kind != core.NoticeReaction && (e.Kind != core.NoticeImage || s.deps.Describe != nil)
}

// show writes one notice: said to this user, as it is; said in a room,
// with its time; an edit or a thread reply under what it changes. A
// notice that asks this user something becomes the question the next
// line answers. away marks what arrived while the console was closed.
func (s *Session) show(ctx context.Context, e core.OutboxEntry, away bool) {
	var text string
	if e.Kind == core.NoticeImage {
		text = "📈 " + s.describe(ctx, e.Body)
	} else {
		text = markdown.Terminal(e.Body, s.cfg.Style)
	}
	var prefix string
	if e.RoomID != s.me || away {
		prefix = "[" + e.CreatedAt.Local().Format("15:04") + "] "
	}
	if e.Kind == core.NoticeEdit || e.Thread {
		prefix += "↳ "
	}
	fmt.Fprintln(s.out, prefix+strings.ReplaceAll(text, "\n", "\n"+strings.Repeat(" ", len([]rune(prefix)))))
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Kind == core.NoticeEdit {
		s.settle(e.Target)
		return
	}
	if e.Kind != core.NoticeMessage {
		return
	}
	switch {
	case e.RoomID == s.me && strings.HasPrefix(e.Key, "confirm:"):
		s.asked = append(s.asked, question{key: e.Key})
	case isDecision(e.Key):
		s.asked = append(s.asked, question{key: e.Key, options: true})
	}
}

// describe is a chart's words, shown as text and never as markup.
func (s *Session) describe(ctx context.Context, request string) string {
	words, err := s.deps.Describe(ctx, request)
	if err != nil {
		// The Matrix sender logs why; the console says only that.
		return "A chart I could not draw."
	}
	return markdown.Terminal(core.EscapeMarkdown(words), false)
}

// isDecision reports whether key is a needs-decision relay's own
// ("decision:<card>:<question>"), not one of its reminders or outcomes.
func isDecision(key string) bool {
	return strings.HasPrefix(key, "decision:") && strings.Count(key, ":") == 2
}

// settle forgets a question whose notice was edited: answered, here or
// elsewhere, or past its deadline.
func (s *Session) settle(key string) {
	for i, q := range s.asked {
		if q.key == key {
			s.asked = append(s.asked[:i], s.asked[i+1:]...)
			return
		}
	}
}

// Prompt is what the next line answers: the newest open question, or a
// line of its own.
func (s *Session) Prompt() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.asked) == 0 {
		return "jarvis › "
	}
	if s.asked[len(s.asked)-1].options {
		return "Option number (Enter leaves it open) › "
	}
	return "Confirm? [y/N] › "
}

// Submit hands a typed line to the lease holder: the answer to the
// newest open question when it reads as one (y, n, Enter; an option's
// number), otherwise a line of its own.
func (s *Session) Submit(ctx context.Context, line string) (int64, error) {
	line = strings.TrimSpace(line)
	in := core.Input{User: s.cfg.User, Body: line, At: s.deps.Clock.Now()}
	s.mu.Lock()
	if n := len(s.asked); n > 0 {
		if answer, ok := answerTo(s.asked[n-1], line); ok {
			if answer != "" {
				in.Answers, in.Body = s.asked[n-1].key, answer
			}
			s.asked = s.asked[:n-1]
		}
	}
	s.mu.Unlock()
	if in.Body == "" {
		return 0, nil
	}
	seq, err := s.deps.Store.AddInput(ctx, in)
	if err != nil {
		return 0, err
	}
	if s.deps.Kick != nil {
		s.deps.Kick()
	}
	return seq, nil
}

// answerTo reads line as the answer to q: ok is false for a line that is
// something else (a command, a sentence), which leaves q open. An empty
// answer leaves an option question open and dismisses a yes/no one.
func answerTo(q question, line string) (answer string, ok bool) {
	word := strings.ToLower(line)
	if q.options {
		if word == "" {
			return "", true
		}
		if strings.Trim(word, "0123456789") == "" {
			return word, true
		}
		return "", false
	}
	switch word {
	case "y", "yes":
		return "yes", true
	case "", "n", "no":
		return "no", true
	}
	return "", false
}

// ErrNoAnswer means no Jarvis acted on a line in time: none holds the
// lease, or the one that does is not keeping up.
var ErrNoAnswer = errors.New("no Jarvis acted on it in time")

// Run hands one line to the lease holder and shows what Jarvis answers
// to it, for `jarvis console -c`: it returns once the line was acted on,
// with how, or ErrNoAnswer after wait. A question in the answer is put
// to ask, when set, and its answer handed over in turn; without ask it
// stays open. The cursor does not move: an open console still shows all.
func (s *Session) Run(ctx context.Context, line string, wait time.Duration, ask func(prompt string) (string, error)) (commands.Outcome, error) {
	after, err := s.deps.Notices.LastSeq(ctx)
	if err != nil {
		return "", fmt.Errorf("read the outbox: %w", err)
	}
	seq, err := s.deps.Store.AddInput(ctx, core.Input{User: s.cfg.User, Body: strings.TrimSpace(line), At: s.deps.Clock.Now()})
	if err != nil {
		return "", err
	}
	if s.deps.Kick != nil {
		s.deps.Kick()
	}
	in, err := s.await(ctx, seq, wait)
	if err != nil {
		return "", err
	}
	outcome := commands.Outcome(in.Outcome)
	for {
		var mine []core.OutboxEntry
		for {
			entries, err := s.deps.Notices.NoticesAfter(ctx, after, noticeBatch)
			if err != nil {
				return outcome, fmt.Errorf("read the outbox: %w", err)
			}
			for _, e := range entries {
				if (e.RoomID == s.me || e.ToUser == s.me) && s.readable(e) {
					mine = append(mine, e)
				}
				after = e.Seq
			}
			if len(entries) < noticeBatch {
				break
			}
		}
		for _, e := range mine {
			s.show(ctx, e, false)
		}
		s.mu.Lock()
		var q *question
		if n := len(s.asked); n > 0 {
			q = &s.asked[n-1]
		}
		s.mu.Unlock()
		if q == nil {
			return outcome, nil
		}
		if ask == nil {
			fmt.Fprintln(s.out, "This waits for your answer; jarvis console asks it when you open it.")
			return outcome, nil
		}
		answer, err := ask(s.Prompt())
		if err != nil {
			return outcome, err
		}
		seq, err := s.Submit(ctx, answer)
		if err != nil || seq == 0 {
			return outcome, err
		}
		if _, err := s.await(ctx, seq, wait); err != nil {
			return outcome, err
		}
	}
}

// await waits until the lease holder acted on input seq, then forgets it.
func (s *Session) await(ctx context.Context, seq int64, wait time.Duration) (core.Input, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ticker := time.NewTicker(PollInterval / 4)
	defer ticker.Stop()
	for {
		in, err := s.deps.Store.Input(ctx, seq)
		if err != nil && ctx.Err() == nil {
			return in, err
		}
		if err == nil && !in.Handled.IsZero() {
			return in, s.deps.Store.DeleteInput(ctx, seq)
		}
		select {
		case <-ctx.Done():
			return in, ErrNoAnswer
		case <-ticker.C:
		}
	}
}
