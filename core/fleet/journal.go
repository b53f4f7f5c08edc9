package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
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

// JournalConfig bounds what one agent's journal holds and how much one read
// of it returns: the fleet.journal section.
type JournalConfig struct {
	// MaxEntryBytes bounds one entry: its title, content and evidence.
	MaxEntryBytes int
	// MaxCycleEntries and MaxCycleBytes bound the entries of one cycle.
	MaxCycleEntries int
	MaxCycleBytes   int
	// MaxAgentBytes bounds the entries of all of an agent's cycles that
	// retention keeps.
	MaxAgentBytes int
	// PageSize is how many entries a read returns when it asks for no
	// limit, and MaxPageSize the most it may ask for.
	PageSize    int
	MaxPageSize int
}

// DefaultJournal is the fleet.journal section of config.example.yaml,
// which a Config built in code without one (as tests build it) gets.
var DefaultJournal = JournalConfig{MaxEntryBytes: 16 << 10, MaxCycleEntries: 1000, MaxCycleBytes: 4 << 20,
	MaxAgentBytes: 64 << 20, PageSize: 50, MaxPageSize: 100}

// orDefault is c, or DefaultJournal when c is the zero section.
func (c JournalConfig) orDefault() JournalConfig {
	if c == (JournalConfig{}) {
		return DefaultJournal
	}
	return c
}

// Validate checks the section; the zero section is DefaultJournal.
func (c JournalConfig) Validate() error {
	c = c.orDefault()
	for _, f := range []struct {
		key string
		n   int
	}{{"max_entry_bytes", c.MaxEntryBytes}, {"max_cycle_entries", c.MaxCycleEntries}, {"max_cycle_bytes", c.MaxCycleBytes},
		{"max_agent_bytes", c.MaxAgentBytes}, {"page_size", c.PageSize}, {"max_page_size", c.MaxPageSize}} {
		if f.n < 1 {
			return core.Invalid("fleet.journal."+f.key, "must be at least 1, got %d", f.n)
		}
	}
	switch {
	case c.MaxCycleBytes < c.MaxEntryBytes:
		return core.Invalid("fleet.journal.max_cycle_bytes", "must be at least max_entry_bytes (%d), got %d", c.MaxEntryBytes, c.MaxCycleBytes)
	case c.MaxAgentBytes < c.MaxCycleBytes:
		return core.Invalid("fleet.journal.max_agent_bytes", "must be at least max_cycle_bytes (%d), got %d", c.MaxCycleBytes, c.MaxAgentBytes)
	case c.PageSize > c.MaxPageSize:
		return core.Invalid("fleet.journal.page_size", "must be at most max_page_size (%d), got %d", c.MaxPageSize, c.PageSize)
	}
	return nil
}

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

// MinJournalEntrySize is the least an entry counts for: its row and index
// entries cost about that whatever its text, and it keeps the number of
// entries an agent's bytes allow, which each new entry's count reads, in
// the tens of thousands.
const MinJournalEntrySize = 1 << 10

// Size is the bytes the entry counts for against the journal's limits: its
// title, content, signature and evidence, and at least
// MinJournalEntrySize.
func (e AgentJournalEntry) Size() int {
	n := len(e.Title) + len(e.Content) + len(e.ContentSignature)
	for _, ev := range e.Evidence {
		n += len(ev.Type) + len(ev.URL) + len(ev.Source) + len(ev.Key)
		if ev.Value != nil {
			n += len(fmt.Sprint(ev.Value))
		}
	}
	return max(n, MinJournalEntrySize)
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
	// JournalPage lists up to limit of the agent's entries of a cycle in
	// arrival order, from the one after the position given (the zero
	// position: from the first).
	JournalPage(ctx context.Context, agent, cycle string, after JournalPosition, limit int) ([]AgentJournalEntry, error)
	// JournalUsage says what the agent's journal holds.
	JournalUsage(ctx context.Context, agent, cycle string) (JournalUsage, error)
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

// JournalPosition is where an entry stands in its cycle's arrival order.
type JournalPosition struct {
	ReceivedAt time.Time
	EntryID    string
}

// JournalUsage is what an agent's journal holds: the entries and bytes
// (by Size) of one cycle, and the bytes of all its cycles.
type JournalUsage struct {
	CycleEntries int
	CycleBytes   int
	AgentBytes   int
}

// JournalPage is one page of a cycle's entries; Next, when not empty, is
// the cursor that reads the page after it.
type JournalPage struct {
	Entries []AgentJournalEntry
	Next    string
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
	limits := f.roster.Load().journal
	size := e.Size()
	if size > limits.MaxEntryBytes {
		return e, core.OverLimit(core.ErrTooLarge, "fleet.journal.max_entry_bytes",
			"the entry is %d bytes, more than the %d an entry may be", size, limits.MaxEntryBytes)
	}
	e.ReceivedAt = f.deps.Clock.Now()
	// The store fences a write transaction with the workspace lease; the
	// journal's usage is read in it, so that two entries at once do not
	// both take the last room. Only an entry of the agent adds to it, and
	// the usage is read under the agent's journal lock: locked reads.
	err = f.deps.Tx.InTx(core.LockedReads(ctx), func(ctx context.Context) error {
		used, err := f.deps.Journal.JournalUsage(ctx, e.Agent, e.Cycle)
		if err != nil {
			return err
		}
		switch {
		case used.CycleEntries >= limits.MaxCycleEntries:
			return core.OverLimit(core.ErrRateLimited, "fleet.journal.max_cycle_entries",
				"cycle %s holds %d entries, the most a cycle may", e.Cycle, used.CycleEntries)
		case used.CycleBytes+size > limits.MaxCycleBytes:
			return core.OverLimit(core.ErrTooLarge, "fleet.journal.max_cycle_bytes",
				"cycle %s holds %d bytes; %d more is over the %d a cycle may", e.Cycle, used.CycleBytes, size, limits.MaxCycleBytes)
		case used.AgentBytes+size > limits.MaxAgentBytes:
			return core.OverLimit(core.ErrTooLarge, "fleet.journal.max_agent_bytes",
				"%s's journal holds %d bytes; %d more is over the %d an agent may keep (room returns as retention prunes old cycles)",
				e.Agent, used.AgentBytes, size, limits.MaxAgentBytes)
		}
		return f.deps.Journal.AppendJournal(ctx, e)
	})
	if err != nil {
		return e, fmt.Errorf("append journal entry %q of %s for %s: %w", e.EntryID, e.Agent, e.Cycle, err)
	}
	f.changed()
	if f.deps.OnJournal != nil {
		f.deps.OnJournal()
	}
	return e, nil
}

// Journal reads a page of an agent's journal entries of a cycle, for the
// archive mirror: up to limit entries (0: fleet.journal.page_size; more
// than fleet.journal.max_page_size is refused) from cursor, a Next of an
// earlier page ("" reads from the first).
func (f *Service) Journal(ctx context.Context, agent, cycle string, limit int, cursor string) (JournalPage, error) {
	a, err := f.lookupAgent("agent", agent)
	if err != nil {
		return JournalPage{}, err
	}
	if !namePattern.MatchString(cycle) {
		return JournalPage{}, core.Invalid("cycle", "must be a cycle such as C-284")
	}
	limits := f.roster.Load().journal
	switch {
	case limit == 0:
		limit = limits.PageSize
	case limit < 0 || limit > limits.MaxPageSize:
		return JournalPage{}, core.Invalid("limit", "must be 1 to %d (fleet.journal.max_page_size), not %d", limits.MaxPageSize, limit)
	}
	after, err := parseJournalCursor(cursor)
	if err != nil {
		return JournalPage{}, err
	}
	// One more than asked says whether a page follows.
	entries, err := f.deps.Journal.JournalPage(ctx, a.Name, cycle, after, limit+1)
	if err != nil {
		return JournalPage{}, fmt.Errorf("journal of %s for %s: %w", a.Name, cycle, err)
	}
	page := JournalPage{Entries: entries}
	if len(entries) > limit {
		page.Entries = entries[:limit]
		last := page.Entries[limit-1]
		page.Next = journalCursor(JournalPosition{ReceivedAt: last.ReceivedAt, EntryID: last.EntryID})
	}
	return page, nil
}

// journalCursor writes a position as an opaque cursor.
func journalCursor(p JournalPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.ReceivedAt.UnixMilli(), 10) + ":" + p.EntryID))
}

// parseJournalCursor reads a cursor journalCursor wrote; "" is the zero
// position.
func parseJournalCursor(cursor string) (JournalPosition, error) {
	if cursor == "" {
		return JournalPosition{}, nil
	}
	bad := core.Invalid("cursor", "is not a cursor this API gave (pass next_cursor as it came)")
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return JournalPosition{}, bad
	}
	ms, id, ok := strings.Cut(string(raw), ":")
	at, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || !namePattern.MatchString(id) {
		return JournalPosition{}, bad
	}
	return JournalPosition{ReceivedAt: time.UnixMilli(at), EntryID: id}, nil
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
