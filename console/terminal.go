package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// statusInterval is how often the status line is brought up to date.
const statusInterval = 2 * time.Second

// Terminal is an interactive console on the process's terminal: line
// editing and history (readline), the status line on the screen's last
// row, the notices shown above the prompt as they arrive. Ctrl-C cancels
// the line being typed; Ctrl-D on an empty line leaves.
type Terminal struct {
	// History is the file that keeps what was typed, across sessions.
	History string
	// Status reads the status line's figures.
	Status func(ctx context.Context) (Status, error)
}

// Run runs the console until the person leaves or ctx ends. newSession
// builds the session on the terminal's writer.
func (t Terminal) Run(ctx context.Context, newSession func(out io.Writer) *Session) error {
	if t.History != "" {
		if err := os.MkdirAll(filepath.Dir(t.History), 0o700); err != nil {
			return fmt.Errorf("keep the history: %w", err)
		}
	}
	rl, err := readline.NewEx(&readline.Config{
		HistoryFile:     t.History,
		HistoryLimit:    1000,
		InterruptPrompt: "^C",
		EOFPrompt:       "",
	})
	if err != nil {
		return fmt.Errorf("open the terminal: %w", err)
	}
	out := rl.Stdout()
	s := newSession(out)
	if err := s.Open(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "Jarvis console. Commands as in the room (!help); Ctrl-C cancels a line, Ctrl-D leaves.")
	bar := &statusBar{out: out}
	bar.reserve()
	rl.SetPrompt(s.Prompt())

	ctx, cancel := context.WithCancel(ctx)
	var loops sync.WaitGroup
	defer func() {
		cancel()
		loops.Wait()
		bar.release()
	}()
	loops.Go(func() {
		// A signal ends ctx while Readline waits for a key: closing it
		// returns.
		<-ctx.Done()
		rl.Close()
	})
	loops.Go(func() { t.follow(ctx, s, rl, bar) })

	for {
		line, err := rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			continue
		case errors.Is(err, io.EOF), ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
		if _, err := s.Submit(ctx, line); err != nil {
			fmt.Fprintf(out, "Could not hand that to Jarvis: %v\n", err)
		}
		rl.SetPrompt(s.Prompt())
	}
}

// follow shows the notices as they arrive and keeps the prompt and the
// status line up to date.
func (t Terminal) follow(ctx context.Context, s *Session, rl *readline.Instance, bar *statusBar) {
	log := zerolog.Ctx(ctx)
	poll := time.NewTicker(PollInterval)
	defer poll.Stop()
	status := time.NewTicker(statusInterval)
	defer status.Stop()
	drawStatus := func() {
		if t.Status == nil {
			return
		}
		st, err := t.Status(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Err(err).Msg("Failed to read the console's status")
			}
			return
		}
		bar.draw(st.String())
	}
	drawStatus()
	prompt := s.Prompt()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			if err := s.Poll(ctx); err != nil && ctx.Err() == nil {
				log.Err(err).Msg("Failed to read the outbox")
			}
			if p := s.Prompt(); p != prompt {
				prompt = p
				rl.SetPrompt(p)
				rl.Refresh()
			}
		case <-status.C:
			drawStatus()
		}
	}
}

// statusBar keeps the screen's last row for the status line: the rows
// above it scroll, it stays. Where stdout is no terminal it draws
// nothing.
type statusBar struct {
	out  io.Writer
	rows int
	last string
}

func (b *statusBar) reserve() {
	ws, err := unix.IoctlGetWinsize(int(os.Stdout.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Row < 3 {
		return
	}
	b.rows = int(ws.Row)
	// A new line first, so the last row is free; then the scrolling
	// region above it, the cursor back where it was.
	fmt.Fprintf(b.out, "\n\x1b7\x1b[1;%dr\x1b8\x1b[1A", b.rows-1)
}

func (b *statusBar) draw(line string) {
	if b.rows == 0 || line == b.last {
		return
	}
	b.last = line
	fmt.Fprintf(b.out, "\x1b7\x1b[%d;1H\x1b[2K\x1b[7m %s \x1b[0m\x1b8", b.rows, line)
}

// release gives the last row back, after readline let the terminal go.
func (b *statusBar) release() {
	if b.rows == 0 {
		return
	}
	fmt.Fprintf(os.Stdout, "\x1b7\x1b[r\x1b[%d;1H\x1b[2K\x1b8", b.rows)
}

// User names the person at the terminal.
func User() (string, error) {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if name := os.Getenv("USER"); name != "" {
		return name, nil
	}
	return "", errors.New("who is at this terminal? neither the user database nor $USER says")
}

// PromptLine asks a question on the terminal, for `jarvis console -c`,
// and reads the answer.
func PromptLine(prompt string) (string, error) {
	fmt.Print(prompt)
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := os.Stdin.Read(buf)
		if n == 1 && buf[0] != '\n' {
			b.WriteByte(buf[0])
		}
		if n == 1 && buf[0] == '\n' || err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return b.String(), err
		}
	}
}
