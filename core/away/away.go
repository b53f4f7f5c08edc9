// Package away is what Jarvis says when it comes back: it rebuilds
// its view of what needs someone from the store (breakers, cards,
// questions, approvals, agents), compares it with the view it kept while
// it was last running, and, after a downtime longer than a threshold,
// posts one "While I was away" message with what changed and what still
// needs someone. Nothing is taken from Jarvis's own summaries.
package away

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Item is one thing that needs someone, as its source sees it now. Key
// names it across restarts; Text is Markdown in which everything the
// workspace wrote is escaped.
type Item struct {
	Key  string
	Text string
}

// Source lists the items of one kind that hold now.
type Source func(ctx context.Context) ([]Item, error)

// StateStore keeps the small record of what was last seen.
type StateStore interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
}

// Config is when Jarvis says what changed while it was away.
type Config struct {
	// After is the downtime past which the message is posted.
	After time.Duration
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.After < time.Second {
		return core.Invalid("workspace.away_after", "must be at least 1s, got %s", c.After)
	}
	return nil
}

// Deps are what the service works with.
type Deps struct {
	State   StateStore
	Tx      core.Transactor
	Outbox  core.Outbox
	Clock   core.Clock
	Room    string
	Sources []Source
}

// Service keeps the record and writes the message.
type Service struct {
	cfg  Config
	deps Deps
}

// NewService returns the service. cfg must have passed Validate.
func NewService(cfg Config, deps Deps) *Service { return &Service{cfg: cfg, deps: deps} }

// stateKey is where the record lives.
const stateKey = "away:record"

// record is the view Jarvis last kept while it ran, and when.
type record struct {
	// Seen is when the record was written, in unix milliseconds; 0 before
	// the first.
	Seen  int64             `json:"seen"`
	Items map[string]string `json:"items"`
}

// Resume is called when this Jarvis starts acting (it gained the lease):
// after a downtime longer than After since the record was last written,
// it posts the message, keyed by that downtime so that it is posted once;
// either way it writes the record anew, in the same transaction. It says
// whether it posted.
func (s *Service) Resume(ctx context.Context) (bool, error) {
	posted := false
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		prev, err := s.load(ctx)
		if err != nil {
			return err
		}
		now := s.deps.Clock.Now()
		items, err := s.gather(ctx)
		if err != nil {
			return err
		}
		if prev.Seen > 0 {
			away := now.Sub(time.UnixMilli(prev.Seen))
			if body := message(away, prev.Items, items); away > s.cfg.After && body != "" {
				if err := s.deps.Outbox.Enqueue(ctx, core.Notice{Key: fmt.Sprintf("away:%d", prev.Seen), RoomID: s.deps.Room,
					Kind: core.NoticeMessage, Body: body}); err != nil {
					return err
				}
				posted = true
			}
		}
		return s.save(ctx, now, items)
	})
	if err != nil {
		return false, fmt.Errorf("resume: %w", err)
	}
	return posted, nil
}

// Record writes the record: what needs someone now, and that Jarvis was
// running. The lead calls it on a ticker while it holds the lease; the
// room has been told of each item meanwhile, by the notice that came with
// it.
func (s *Service) Record(ctx context.Context) error {
	return s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		items, err := s.gather(ctx)
		if err != nil {
			return err
		}
		return s.save(ctx, s.deps.Clock.Now(), items)
	})
}

func (s *Service) gather(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, src := range s.deps.Sources {
		items, err := src(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			out[it.Key] = it.Text
		}
	}
	return out, nil
}

func (s *Service) load(ctx context.Context) (record, error) {
	raw, err := s.deps.State.State(ctx, stateKey)
	if err != nil || raw == "" {
		return record{}, err
	}
	var r record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return record{}, fmt.Errorf("read %s: %w", stateKey, err)
	}
	return r, nil
}

func (s *Service) save(ctx context.Context, now time.Time, items map[string]string) error {
	raw, err := json.Marshal(record{Seen: now.UnixMilli(), Items: items})
	if err != nil {
		return err
	}
	return s.deps.State.SetState(ctx, stateKey, string(raw))
}

// message is the "While I was away" message, or "" when nothing changed
// and nothing needs anyone.
func message(away time.Duration, before, now map[string]string) string {
	var changed []string
	for _, k := range sortedKeys(now) {
		if _, ok := before[k]; !ok {
			changed = append(changed, "- 🆕 "+now[k])
		}
	}
	for _, k := range sortedKeys(before) {
		if _, ok := now[k]; !ok {
			changed = append(changed, "- ✅ no longer: "+before[k])
		}
	}
	if len(changed) == 0 && len(now) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**While I was away (%s):**", core.HumanDuration(away))
	if len(changed) == 0 {
		b.WriteString(" nothing changed.\n")
	} else {
		b.WriteString("\n" + strings.Join(changed, "\n") + "\n")
	}
	if len(now) == 0 {
		b.WriteString("\nNothing needs anyone now.")
		return b.String()
	}
	b.WriteString("\nStill needs someone:\n")
	for _, k := range sortedKeys(now) {
		b.WriteString("- " + now[k] + "\n")
	}
	return strings.TrimSpace(b.String())
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
