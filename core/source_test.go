package core_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
)

func TestSourceRegistryRejectsDuplicates(t *testing.T) {
	resolve := func(context.Context, string) (core.Observation, error) { return core.Observation{}, nil }
	for _, tt := range []struct {
		name string
		kind core.SourceKind
	}{
		{name: "same kind", kind: core.SourceKind{Kind: "integrity.gi", Resolve: resolve}},
		{name: "kind taken as an alias", kind: core.SourceKind{Kind: "GI", Resolve: resolve}},
		{name: "alias taken, other case", kind: core.SourceKind{Kind: "integrity.gi2", Aliases: []string{"Global Integrity"}, Resolve: resolve}},
		{name: "no resolver", kind: core.SourceKind{Kind: "weather"}},
		{name: "no name", kind: core.SourceKind{Resolve: resolve}},
		{name: "unknown value type", kind: core.SourceKind{Kind: "weather", Value: "temperature", Resolve: resolve}},
		{name: "category without categories", kind: core.SourceKind{Kind: "weather", Value: core.ValueCategory, Resolve: resolve}},
		{name: "categories of a number", kind: core.SourceKind{Kind: "weather", Value: core.ValueNumber, Categories: []string{"sunny"}, Resolve: resolve}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := core.NewSourceRegistry(core.SourceKind{Kind: "integrity.gi", Aliases: []string{"GI", "global integrity"}, Resolve: resolve})
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", tt.kind)
				}
			}()
			reg.Register(tt.kind)
		})
	}
}

func TestSourceRegistryMatchesAliases(t *testing.T) {
	reg := coretest.Registry()
	for _, tt := range []struct{ name, want string }{
		{"GI", "integrity.gi"},
		{"  global INTEGRITY ", "integrity.gi"},
		{"integrity.gi", "integrity.gi"},
		{"agent.status", "agent.status"},
		{"weather", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := reg.Match(tt.name)
			if ok != (tt.want != "") || k.Kind != tt.want {
				t.Errorf("Match(%q) = %q, %v; want %q", tt.name, k.Kind, ok, tt.want)
			}
		})
	}
	if kinds := reg.Kinds(); len(kinds) != 7 || kinds[0].Kind != "integrity.gi" {
		t.Errorf("Kinds() lists %d, first %q; want 7 in registration order", len(kinds), kinds[0].Kind)
	}
}

func TestSourceRegistryChecksParams(t *testing.T) {
	reg := coretest.Registry()
	reg.Register(core.SourceKind{Kind: "url-fetch", Param: "URL and path",
		CheckParam: func(p string) error {
			if p != "https://ok.example/ x" {
				return errors.New("host not allowed")
			}
			return nil
		},
		Resolve: func(context.Context, string) (core.Observation, error) { return core.Observation{}, nil }})
	for _, tt := range []struct {
		name      string
		ref       core.SourceRef
		wantField string
	}{
		{name: "no param needed", ref: core.SourceRef{Kind: "integrity.gi"}},
		{name: "param given", ref: core.SourceRef{Kind: "agent.status", Param: "EVE"}},
		{name: "no kind", ref: core.SourceRef{}, wantField: "source.kind"},
		{name: "unknown kind", ref: core.SourceRef{Kind: "weather"}, wantField: "source.kind"},
		{name: "param where none is taken", ref: core.SourceRef{Kind: "integrity.gi", Param: "x"}, wantField: "source.param"},
		{name: "param missing", ref: core.SourceRef{Kind: "agent.status"}, wantField: "source.param"},
		{name: "param refused by the kind", ref: core.SourceRef{Kind: "url-fetch", Param: "https://evil.example/ x"}, wantField: "source.param"},
		{name: "param accepted by the kind", ref: core.SourceRef{Kind: "url-fetch", Param: "https://ok.example/ x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := reg.Check("source", tt.ref)
			var fe *core.FieldError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("check() = %v, want ok", err)
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField):
				t.Errorf("check() = %v, want an error naming %s", err, tt.wantField)
			}
		})
	}
}

func TestSourceRegistryResolveNormalizesValues(t *testing.T) {
	reg := core.NewSourceRegistry(
		core.SourceKind{Kind: "count", Resolve: func(context.Context, string) (core.Observation, error) { return core.Observation{Value: 3}, nil }},
		core.SourceKind{Kind: "map", Resolve: func(context.Context, string) (core.Observation, error) {
			return core.Observation{Value: map[string]any{}}, nil
		}},
	)
	if obs, err := reg.Resolve(context.Background(), core.SourceRef{Kind: "count"}); err != nil || obs.Value != 3.0 {
		t.Errorf("an int value: %v, %v; want 3.0", obs.Value, err)
	}
	if _, err := reg.Resolve(context.Background(), core.SourceRef{Kind: "map"}); err == nil {
		t.Error("a map value was accepted; want an error")
	}
	if _, err := reg.Resolve(context.Background(), core.SourceRef{Kind: "gone"}); err == nil {
		t.Error("an unknown kind resolved; want an error")
	}
}

func TestMemoCallsOncePerPass(t *testing.T) {
	var calls atomic.Int32
	fetch := func() (string, error) { calls.Add(1); return "snapshot", nil }
	ctx := core.WithMemo(context.Background())
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := core.Memo(ctx, "snapshot", fetch); v != "snapshot" || err != nil {
				t.Errorf("Memo() = %q, %v", v, err)
			}
		}()
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("fetched %d times in one pass, want once", n)
	}
	_, _ = core.Memo(core.WithMemo(context.Background()), "snapshot", fetch)
	_, _ = core.Memo(context.Background(), "snapshot", fetch)
	if n := calls.Load(); n != 3 {
		t.Errorf("fetched %d times over three passes, want 3", n)
	}
}

// TestResolveAllReadsAKindAtOnce: ResolveAll reads the references of a
// kind with ResolveMany in one call, the others one by one, and gives
// each reference what Resolve gives it: its value normalised, its error,
// a panic as the error of the references the panicking call was reading
// and of no others.
func TestResolveAllReadsAKindAtOnce(t *testing.T) {
	var calls, manyCalls atomic.Int64
	one := func(_ context.Context, p string) (core.Observation, error) {
		calls.Add(1)
		switch p {
		case "bad":
			return core.Observation{}, errors.New("no such thing")
		case "panic":
			panic("boom")
		}
		return core.Observation{Value: len(p)}, nil
	}
	reg := core.NewSourceRegistry(
		core.SourceKind{Kind: "one", Param: "x", Resolve: one},
		core.SourceKind{Kind: "many", Param: "x", Resolve: one, ResolveMany: func(ctx context.Context, ps []string) ([]core.Observation, []error) {
			manyCalls.Add(1)
			obs, errs := make([]core.Observation, len(ps)), make([]error, len(ps))
			for i, p := range ps {
				if p == "panic" {
					continue // the one-by-one resolver panics on it; this one does not
				}
				obs[i], errs[i] = one(ctx, p)
				calls.Add(-1)
			}
			return obs, errs
		}},
		core.SourceKind{Kind: "panics", Param: "x", Resolve: one, ResolveMany: func(context.Context, []string) ([]core.Observation, []error) {
			panic("boom at once")
		}},
		core.SourceKind{Kind: "short", Param: "x", Resolve: one, ResolveMany: func(context.Context, []string) ([]core.Observation, []error) {
			return nil, nil
		}},
		core.SourceKind{Kind: "odd", Param: "x", Resolve: one, ResolveMany: func(_ context.Context, ps []string) ([]core.Observation, []error) {
			return make([]core.Observation, len(ps)), make([]error, len(ps)) // nil values
		}},
	)
	refs := []core.SourceRef{
		{Kind: "one", Param: "abc"}, {Kind: "many", Param: "abcd"}, {Kind: "one", Param: "bad"}, {Kind: "many", Param: "bad"},
		{Kind: "one", Param: "panic"}, {Kind: "many", Param: "ab"}, {Kind: "panics", Param: "a"}, {Kind: "panics", Param: "b"},
		{Kind: "short", Param: "a"}, {Kind: "odd", Param: "a"}, {Kind: "gone", Param: "a"},
	}
	got := core.NewSourceRegistry().ResolveAll(context.Background(), nil, 4)
	if len(got) != 0 {
		t.Errorf("ResolveAll(nothing) = %v", got)
	}
	got = reg.ResolveAll(context.Background(), refs, 4)
	want := []struct {
		value any
		err   string
	}{
		{value: 3.0}, {value: 4.0}, {err: "no such thing"}, {err: "no such thing"},
		{err: "source panicked: boom"}, {value: 2.0}, {err: "source panicked: boom at once"}, {err: "source panicked: boom at once"},
		{err: "short gave 0 values and 0 errors for 1 params"}, {err: "odd[a] gave a <nil>, not a number, string or boolean"},
		{err: `unknown source kind "gone"`},
	}
	if n := manyCalls.Load(); n != 1 {
		t.Errorf("the kind that reads many at once was called %d times, want once for its three references", n)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d one-by-one reads, want 3 (the kind without ResolveMany)", n)
	}
	for i, w := range want {
		gotErr := ""
		if got[i].Err != nil {
			gotErr = got[i].Err.Error()
		}
		if got[i].Observation.Value != w.value || gotErr != w.err {
			t.Errorf("%s = %v, %q; want %v, %q", refs[i], got[i].Observation.Value, gotErr, w.value, w.err)
		}
		if (refs[i].Kind != "one" && refs[i].Kind != "many") || refs[i].Param == "panic" {
			continue
		}
		// Resolve, one reference at a time, says the same.
		obs, err := reg.Resolve(context.Background(), refs[i])
		if obs.Value != w.value || fmt.Sprint(err) != fmt.Sprint(got[i].Err) {
			t.Errorf("Resolve(%s) = %v, %v; want %v, %q", refs[i], obs.Value, err, w.value, w.err)
		}
	}
}
