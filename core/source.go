package core

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// SourceRef names what a tripwire watches: a source kind and, for kinds that
// take one, a param (an agent name, a feed URL and keyword).
type SourceRef struct {
	Kind  string `json:"kind"`
	Param string `json:"param,omitempty"`
}

// String renders the reference as kind or kind[param].
func (r SourceRef) String() string {
	if r.Param == "" {
		return r.Kind
	}
	return r.Kind + "[" + r.Param + "]"
}

// Observation is what a source saw when it was resolved.
type Observation struct {
	// Value is a float64, a string or a bool.
	Value any
	// Context is source-attached detail kept with a trip (the feed item's
	// link, the agent's last heartbeat).
	Context map[string]any
	// Display renders the value for people; empty means the value itself.
	Display string
}

// SourceUnavailable is a source that could not be read, as the owner of a
// tripwire may be told: its Error is "source unavailable: " and a reason
// class ("address not allowed", "timed out", "bad response"), never the
// URL or resolver text behind it, which Detail keeps for the operator's
// log.
type SourceUnavailable struct {
	Reason string
	Detail error
}

func (e *SourceUnavailable) Error() string { return "source unavailable: " + e.Reason }

// Unwrap returns the detail.
func (e *SourceUnavailable) Unwrap() error { return e.Detail }

// Resolver reads the current value of a source kind for one param.
type Resolver func(ctx context.Context, param string) (Observation, error)

// ManyResolver reads the current values of a source kind for many params
// at once: one observation or error for each param, in their order.
type ManyResolver func(ctx context.Context, params []string) ([]Observation, []error)

// ValueType says what a source kind's values are, so that a sentence about
// the kind reads without guessing: "70%" of a ratio is 0.70, "10 minutes"
// of a seconds kind is 600.
type ValueType string

// The value types. The zero value says nothing, and reads as text.
const (
	// ValueNumber is any number: a balance, a value read from JSON.
	ValueNumber ValueType = "number"
	// ValueRatio is a number from 0 to 1 (GI, MII): "70%" is 0.70.
	ValueRatio ValueType = "ratio"
	// ValueSeconds is a duration in seconds: "10 minutes" is 600.
	ValueSeconds ValueType = "seconds"
	// ValueCount is how many of something: said without a number, it is
	// "more than 0".
	ValueCount ValueType = "count"
	// ValueCategory is one of the kind's Categories.
	ValueCategory ValueType = "category"
	// ValueText is text without a fixed set of values (a feed item's id).
	ValueText ValueType = "text"
)

// ValueTypes lists the value types, for messages that name them.
var ValueTypes = []ValueType{ValueNumber, ValueRatio, ValueSeconds, ValueCount, ValueCategory, ValueText}

// Valid reports whether t is one of ValueTypes, or unset.
func (t ValueType) Valid() bool { return t == "" || slices.Contains(ValueTypes, t) }

// Numeric reports whether values of the type are numbers.
func (t ValueType) Numeric() bool {
	return t == ValueNumber || t == ValueRatio || t == ValueSeconds || t == ValueCount
}

// ParamType says what a source kind's param is, so that the words of a
// sentence can fill it.
type ParamType string

// The param types. The zero value reads as ParamName.
const (
	// ParamName is a name written beside the kind's name or alias
	// ("micro-agent DAEDALUS-µ5").
	ParamName ParamType = "name"
	// ParamAgent is the name of a configured agent.
	ParamAgent ParamType = "agent"
	// ParamCard is a card id, card_….
	ParamCard ParamType = "card"
	// ParamUser is a Matrix user ID.
	ParamUser ParamType = "user"
	// ParamURL is a URL, a space, then what to read there (a JSON path, a
	// keyword).
	ParamURL ParamType = "url"
)

// SourceKind is one entry of the source registry. Adding a kind of source
// is one SourceKind; the evaluator needs no change.
type SourceKind struct {
	// Kind is the name definitions use, e.g. "integrity.gi".
	Kind string
	// Aliases are the names people use for it in sentences, e.g. "GI" and
	// "global integrity"; the chat parser matches them case-insensitively.
	Aliases []string
	// Description says in one line what the kind reads.
	Description string
	// Value is the type of the kind's values.
	Value ValueType
	// Categories are the values a ValueCategory kind takes, e.g. "online",
	// "late" and "offline".
	Categories []string
	// Param describes the param the kind takes ("agent name"); empty means
	// the kind takes none.
	Param string
	// ParamType says what the param is.
	ParamType ParamType
	// ParamOptional lets the param be left out of a kind that takes one.
	ParamOptional bool
	// CheckParam, when set, vets a param when a tripwire is armed (a URL
	// against the host allowlist).
	CheckParam func(param string) error
	// Resolve reads the value.
	Resolve Resolver
	// Network marks a kind that reads over the network (a URL, a feed):
	// the evaluator reads it outside its lock, within each person's fetch
	// budget, so that sources of Jarvis's own state never wait for it.
	Network bool
	// ResolveMany, when set, reads the values of many params at once: a
	// few queries for all of them rather than some for each. An evaluator
	// pass reads every source of the kind through it.
	ResolveMany ManyResolver
}

// SourceRegistry is the catalog of source kinds tripwires may watch. It is
// safe for concurrent use.
type SourceRegistry struct {
	mu    sync.RWMutex
	kinds map[string]SourceKind
	names map[string]string // lower-case kind or alias → kind
	order []string
}

// NewSourceRegistry returns a registry holding the given kinds.
func NewSourceRegistry(kinds ...SourceKind) *SourceRegistry {
	r := &SourceRegistry{kinds: map[string]SourceKind{}, names: map[string]string{}}
	for _, k := range kinds {
		r.Register(k)
	}
	return r
}

// Register adds a kind. A kind without a name or resolver, or whose name or
// an alias is already taken, is a programming error: Register panics, so the
// mistake shows at start-up.
func (r *SourceRegistry) Register(k SourceKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case k.Kind == "" || k.Resolve == nil:
		panic(fmt.Sprintf("source kind %q: a name and a resolver are required", k.Kind))
	case !k.Value.Valid():
		panic(fmt.Sprintf("source kind %q: value type %q is none of %v", k.Kind, k.Value, ValueTypes))
	case (k.Value == ValueCategory) != (len(k.Categories) > 0):
		panic(fmt.Sprintf("source kind %q: categories go with the category value type, and it needs them", k.Kind))
	}
	for _, name := range append([]string{k.Kind}, k.Aliases...) {
		key := strings.ToLower(name)
		if owner, taken := r.names[key]; taken {
			panic(fmt.Sprintf("source kind %q: name %q is already taken by %q", k.Kind, name, owner))
		}
		r.names[key] = k.Kind
	}
	r.kinds[k.Kind] = k
	r.order = append(r.order, k.Kind)
}

// Lookup returns the kind with exactly this name.
func (r *SourceRegistry) Lookup(kind string) (SourceKind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.kinds[kind]
	return k, ok
}

// Match finds a kind by its name or one of its aliases, ignoring case.
func (r *SourceRegistry) Match(name string) (SourceKind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	kind, ok := r.names[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return SourceKind{}, false
	}
	return r.kinds[kind], true
}

// Kinds lists the registered kinds in registration order.
func (r *SourceRegistry) Kinds() []SourceKind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]SourceKind, len(r.order))
	for i, name := range r.order {
		out[i] = r.kinds[name]
	}
	return out
}

// Check vets a reference; field names the reference in errors.
func (r *SourceRegistry) Check(field string, ref SourceRef) error {
	k, ok := r.Lookup(ref.Kind)
	switch {
	case ref.Kind == "":
		return Invalid(field+".kind", "is required")
	case !ok:
		return Invalid(field+".kind", "unknown source kind %q", ref.Kind)
	case k.Param == "" && ref.Param != "":
		return Invalid(field+".param", "%s takes no param", ref.Kind)
	case k.Param != "" && !k.ParamOptional && strings.TrimSpace(ref.Param) == "":
		return Invalid(field+".param", "%s needs a param: %s", ref.Kind, k.Param)
	case len(ref.Param) > 2000:
		return Invalid(field+".param", "is longer than 2000 characters")
	}
	if k.CheckParam != nil && ref.Param != "" {
		if err := k.CheckParam(ref.Param); err != nil {
			return Invalid(field+".param", "%v", err)
		}
	}
	return nil
}

// Resolve reads one reference.
func (r *SourceRegistry) Resolve(ctx context.Context, ref SourceRef) (Observation, error) {
	k, ok := r.Lookup(ref.Kind)
	if !ok {
		return Observation{}, fmt.Errorf("unknown source kind %q", ref.Kind)
	}
	obs, err := k.Resolve(ctx, ref.Param)
	res := settle(ref, obs, err)
	return res.Observation, res.Err
}

// Resolution is what reading one reference gave.
type Resolution struct {
	Observation Observation
	Err         error
}

// ResolveAll reads distinct references: those of a kind with ResolveMany
// in one call per kind, the others one by one, at most workers calls at a
// time. A resolver that panics fails the references it was reading, and
// no others.
func (r *SourceRegistry) ResolveAll(ctx context.Context, refs []SourceRef, workers int) []Resolution {
	out := make([]Resolution, len(refs))
	type call struct {
		kind SourceKind
		refs []int // indexes into refs
	}
	var calls []call
	batched := map[string]int{} // kind → its call
	for i, ref := range refs {
		k, ok := r.Lookup(ref.Kind)
		switch {
		case !ok:
			out[i].Err = fmt.Errorf("unknown source kind %q", ref.Kind)
		case k.ResolveMany == nil:
			calls = append(calls, call{kind: k, refs: []int{i}})
		default:
			c, ok := batched[k.Kind]
			if !ok {
				c = len(calls)
				batched[k.Kind] = c
				calls = append(calls, call{kind: k})
			}
			calls[c].refs = append(calls[c].refs, i)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(workers, 1))
	for _, c := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resolveCall(ctx, c.kind, refs, c.refs, out)
		}()
	}
	wg.Wait()
	return out
}

// resolveCall reads refs[i] for each i of idx with k, into out[i].
func resolveCall(ctx context.Context, k SourceKind, refs []SourceRef, idx []int, out []Resolution) {
	defer func() {
		if p := recover(); p != nil {
			for _, i := range idx {
				out[i] = Resolution{Err: fmt.Errorf("source panicked: %v", p)}
			}
		}
	}()
	if k.ResolveMany == nil {
		obs, err := k.Resolve(ctx, refs[idx[0]].Param)
		out[idx[0]] = settle(refs[idx[0]], obs, err)
		return
	}
	params := make([]string, len(idx))
	for n, i := range idx {
		params[n] = refs[i].Param
	}
	obs, errs := k.ResolveMany(ctx, params)
	if len(obs) != len(params) || len(errs) != len(params) {
		err := fmt.Errorf("%s gave %d values and %d errors for %d params", k.Kind, len(obs), len(errs), len(params))
		for _, i := range idx {
			out[i] = Resolution{Err: err}
		}
		return
	}
	for n, i := range idx {
		out[i] = settle(refs[i], obs[n], errs[n])
	}
}

// settle is what a resolver's answer for ref comes to: its error, or the
// observation with its value normalised.
func settle(ref SourceRef, obs Observation, err error) Resolution {
	if err != nil {
		return Resolution{Err: err}
	}
	v, ok := NormalizeValue(obs.Value)
	if !ok {
		return Resolution{Err: fmt.Errorf("%s gave a %T, not a number, string or boolean", ref, obs.Value)}
	}
	obs.Value = v
	return Resolution{Observation: obs}
}

type memoKey struct{}

type memoTable struct {
	mu      sync.Mutex
	entries map[string]*memoEntry
}

type memoEntry struct {
	once  sync.Once
	value any
	err   error
}

// WithMemo returns a context in which Memo calls with the same key share one
// result. The evaluator gives each pass one, so that a snapshot several
// kinds read is fetched once per tick.
func WithMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, memoKey{}, &memoTable{entries: map[string]*memoEntry{}})
}

// Memo returns fn's result for key, calling fn at most once in a context
// made by WithMemo (concurrent callers wait for the first); elsewhere it
// simply calls fn.
func Memo[T any](ctx context.Context, key string, fn func() (T, error)) (T, error) {
	table, ok := ctx.Value(memoKey{}).(*memoTable)
	if !ok {
		return fn()
	}
	table.mu.Lock()
	e, ok := table.entries[key]
	if !ok {
		e = &memoEntry{}
		table.entries[key] = e
	}
	table.mu.Unlock()
	e.once.Do(func() { e.value, e.err = fn() })
	v, _ := e.value.(T)
	return v, e.err
}
