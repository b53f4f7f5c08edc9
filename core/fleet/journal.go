package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/core"
)

// Limits on a journal entry.
const (
	MaxJournalTitle    = 200
	MaxJournalEvidence = 50
)

// AgentJournalEntry is one entry of an agent's journal for a cycle: what
// it did, with the evidence behind it. Entries are append-only per (agent,
// cycle, entry id).
type AgentJournalEntry struct {
	Agent   string
	Cycle   string
	EntryID string
	Title   string
	// Content is the Markdown body; ContentSignature is "sha256:" and the
	// hex SHA-256 of it.
	Content          string
	ContentSignature string
	SignalWeight     float64
	Evidence         []JournalEvidence
	// Timestamp is when the agent wrote the entry.
	Timestamp time.Time
	// ReceivedAt is when Jarvis accepted it; set by AppendJournal.
	ReceivedAt time.Time
}

// JournalEvidence is one piece of verifiable evidence behind a journal
// entry: a link ({type: "pr", url}) or a metric ({type: "metric", source,
// key, value}).
type JournalEvidence struct {
	Type   string
	URL    string
	Source string
	Key    string
	Value  any
}

// AgentJournalStore keeps agents' journal entries.
type AgentJournalStore interface {
	// AppendJournal adds an entry; an entry id the agent already used in the
	// cycle is ErrConflict.
	AppendJournal(ctx context.Context, e AgentJournalEntry) error
	// JournalEntries lists the agent's entries of a cycle in arrival order.
	JournalEntries(ctx context.Context, agent, cycle string) ([]AgentJournalEntry, error)
	// JournalEntriesWithEvidence lists the entries that carry evidence of
	// evidenceType of each agent named, of the cycle given beside it, by
	// agent and in arrival order.
	JournalEntriesWithEvidence(ctx context.Context, cycles map[string]string, evidenceType string) ([]AgentJournalEntry, error)
	// JournalCounts counts, for each agent named, its entries of the cycle
	// given beside it; an agent without entries there is left out.
	JournalCounts(ctx context.Context, cycles map[string]string) (map[string]int, error)
	// LatestJournal returns the cycle and arrival time of the agent's most
	// recent entry; ErrNotFound when it has none.
	LatestJournal(ctx context.Context, agent string) (cycle string, at time.Time, err error)
	// LatestJournals returns the latest entry's mark of each of the agents
	// that has one.
	LatestJournals(ctx context.Context, agents []string) (map[string]JournalMark, error)
}

// JournalMark is the cycle and arrival time of an agent's most recent
// journal entry.
type JournalMark struct {
	Cycle string
	At    time.Time
}

// ContentSignature returns the signature a journal entry's content must
// carry: "sha256:" and the hex SHA-256 of the content.
func ContentSignature(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// AppendJournal validates and appends a journal entry. The same entry id
// within a cycle is ErrConflict; a content signature that does not match the
// content is a FieldError on content_signature.
func (f *Service) AppendJournal(ctx context.Context, e AgentJournalEntry) (AgentJournalEntry, error) {
	a, err := f.lookupAgent("agent", e.Agent)
	if err != nil {
		return e, err
	}
	e.Agent = a.Name
	if err := validateJournalEntry(e); err != nil {
		return e, err
	}
	e.ReceivedAt = f.deps.Clock.Now()
	// One statement, but a write transaction all the same: the store fences
	// those with the workspace lease.
	err = f.deps.Tx.InTx(ctx, func(ctx context.Context) error { return f.deps.Journal.AppendJournal(ctx, e) })
	if err != nil {
		return e, fmt.Errorf("append journal entry %q of %s for %s: %w", e.EntryID, e.Agent, e.Cycle, err)
	}
	f.changed()
	if f.deps.OnJournal != nil {
		f.deps.OnJournal()
	}
	return e, nil
}

// Journal lists an agent's journal entries of a cycle, for the archive
// mirror.
func (f *Service) Journal(ctx context.Context, agent, cycle string) ([]AgentJournalEntry, error) {
	a, err := f.lookupAgent("agent", agent)
	if err != nil {
		return nil, err
	}
	if !namePattern.MatchString(cycle) {
		return nil, core.Invalid("cycle", "must be a cycle such as C-284")
	}
	return f.deps.Journal.JournalEntries(ctx, a.Name, cycle)
}

// CurrentEvidence returns the entries of each agent's latest cycle that
// carry evidence of evidenceType, in arrival order, by agent; an agent
// that has journaled nothing, or nothing such, is left out. It reads the
// store twice, however many agents are named.
func (f *Service) CurrentEvidence(ctx context.Context, agents []string, evidenceType string) (map[string][]AgentJournalEntry, error) {
	latest, err := f.deps.Journal.LatestJournals(ctx, agents)
	if err != nil || len(latest) == 0 {
		return nil, err
	}
	cycles := make(map[string]string, len(latest))
	for agent, mark := range latest {
		cycles[agent] = mark.Cycle
	}
	entries, err := f.deps.Journal.JournalEntriesWithEvidence(ctx, cycles, evidenceType)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]AgentJournalEntry)
	for _, e := range entries {
		out[e.Agent] = append(out[e.Agent], e)
	}
	return out, nil
}

// EntriesAbout returns the entries of the agent's latest cycle whose
// evidence names key (a card id), in arrival order; none when the agent
// has journaled nothing yet.
func (f *Service) EntriesAbout(ctx context.Context, agent, key string) ([]AgentJournalEntry, error) {
	cycle, _, err := f.deps.Journal.LatestJournal(ctx, agent)
	if errors.Is(err, core.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	entries, err := f.deps.Journal.JournalEntries(ctx, agent, cycle)
	if err != nil {
		return nil, err
	}
	var out []AgentJournalEntry
	for _, e := range entries {
		if slices.ContainsFunc(e.Evidence, func(ev JournalEvidence) bool { return ev.Key == key }) {
			out = append(out, e)
		}
	}
	return out, nil
}

func validateJournalEntry(e AgentJournalEntry) error {
	switch {
	case !namePattern.MatchString(e.Cycle):
		return core.Invalid("cycle", "must be 1 to 128 letters, digits, '.', '_' or '-', such as C-284")
	case !namePattern.MatchString(e.EntryID):
		return core.Invalid("entry_id", "must be 1 to 128 letters, digits, '.', '_' or '-', such as eve-C-284-001")
	case strings.TrimSpace(e.Title) == "":
		return core.Invalid("title", "is required")
	case utf8.RuneCountInString(e.Title) > MaxJournalTitle:
		return core.Invalid("title", "must be at most %d characters", MaxJournalTitle)
	case strings.TrimSpace(e.Content) == "":
		return core.Invalid("content", "is required")
	case !strings.HasPrefix(e.ContentSignature, "sha256:"):
		return core.Invalid("content_signature", "must be \"sha256:\" and the hex SHA-256 of content")
	case !strings.EqualFold(e.ContentSignature, ContentSignature(e.Content)):
		return core.Invalid("content_signature", "does not match the content")
	case math.IsNaN(e.SignalWeight) || e.SignalWeight < 0 || e.SignalWeight > 1:
		return core.Invalid("signal_weight", "must be between 0 and 1, not %v", e.SignalWeight)
	case len(e.Evidence) > MaxJournalEvidence:
		return core.Invalid("verifiable_evidence", "must list at most %d items", MaxJournalEvidence)
	case e.Timestamp.IsZero():
		return core.Invalid("timestamp", "is required")
	}
	for i, ev := range e.Evidence {
		if err := validateEvidence(ev); err != nil {
			var fe *core.FieldError
			if errors.As(err, &fe) {
				return core.Invalid(fmt.Sprintf("verifiable_evidence[%d].%s", i, fe.Field), "%s", fe.Reason)
			}
			return err
		}
	}
	return nil
}

func validateEvidence(ev JournalEvidence) error {
	if strings.TrimSpace(ev.Type) == "" || len(ev.Type) > 32 {
		return core.Invalid("type", "is required (at most 32 characters)")
	}
	if ev.URL == "" {
		return nil
	}
	u, err := url.Parse(ev.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return core.Invalid("url", "must be an absolute http(s) URL")
	}
	return nil
}
