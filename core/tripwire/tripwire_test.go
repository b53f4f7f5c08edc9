package tripwire

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
)

func TestTripwireDefinitionValidate(t *testing.T) {
	reg := coretest.Registry()
	valid := func() Definition {
		return Definition{
			Label: "GI below yellow band", Rationale: "the substrate degrades",
			Source: core.SourceRef{Kind: "integrity.gi"}, Condition: Condition{Op: OpLT, Threshold: 0.7},
			Action: DefaultAction, CooldownSeconds: DefaultCooldownSeconds,
		}
	}
	for _, tt := range []struct {
		name      string
		edit      func(d *Definition)
		wantField string
	}{
		{name: "valid", edit: func(*Definition) {}},
		{name: "no label", edit: func(d *Definition) { d.Label = "" }, wantField: "label"},
		{name: "label of 120 characters", edit: func(d *Definition) { d.Label = strings.Repeat("µ", 120) }},
		{name: "label of 121 characters", edit: func(d *Definition) { d.Label = strings.Repeat("a", 121) }, wantField: "label"},
		{name: "label on two lines", edit: func(d *Definition) { d.Label = "GI\nlow" }, wantField: "label"},
		{name: "no rationale", edit: func(d *Definition) { d.Rationale = "" }, wantField: "rationale"},
		{name: "rationale of 2001 characters", edit: func(d *Definition) { d.Rationale = strings.Repeat("a", 2001) }, wantField: "rationale"},
		{name: "no action at all", edit: func(d *Definition) { d.Action = Action{} }, wantField: "action"},
		{name: "push only", edit: func(d *Definition) { d.Action = Action{Push: true} }},
		{name: "negative cooldown", edit: func(d *Definition) { d.CooldownSeconds = -1 }, wantField: "cooldown_seconds"},
		{name: "cooldown over 30 days", edit: func(d *Definition) { d.CooldownSeconds = MaxCooldownSeconds + 1 }, wantField: "cooldown_seconds"},
		{name: "unknown source", edit: func(d *Definition) { d.Source.Kind = "weather" }, wantField: "source.kind"},
		{name: "missing param", edit: func(d *Definition) { d.Source = core.SourceRef{Kind: "agent.status"} }, wantField: "source.param"},
		{name: "bad condition", edit: func(d *Definition) { d.Condition.Threshold = "low" }, wantField: "condition.threshold"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := valid()
			tt.edit(&d)
			err := d.Validate(reg)
			var fe *core.FieldError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("Validate() = %v, want ok", err)
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField || !errors.Is(err, core.ErrInvalid)):
				t.Errorf("Validate() = %v, want an invalid %s", err, tt.wantField)
			}
		})
	}
}

func TestTripwireActionDefaults(t *testing.T) {
	for _, tt := range []struct {
		json string
		want Action
	}{
		{`{}`, Action{Journal: true}},
		{`{"push": true}`, Action{Journal: true, Push: true}},
		{`{"journal": false, "push": true}`, Action{Push: true}},
	} {
		t.Run(tt.json, func(t *testing.T) {
			var a Action
			if err := json.Unmarshal([]byte(tt.json), &a); err != nil || a != tt.want {
				t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", tt.json, a, err, tt.want)
			}
		})
	}
}

func TestCheckScope(t *testing.T) {
	for _, tt := range []struct {
		scope string
		ok    bool
	}{
		{"self", true},
		{"@alice:example.org", true},
		{"@telegram_123:bridge.example.org", true},
		{"console:alice", true},
		{"console:", false},
		{"console:al ice", false},
		{"", false},
		{"alice", false},
		{"@alice", false},
		{"@:example.org", false},
		{"@alice :example.org", false},
		{"@" + strings.Repeat("a", 250) + ":example.org", false},
	} {
		t.Run(tt.scope, func(t *testing.T) {
			if err := CheckScope(tt.scope); (err == nil) != tt.ok {
				t.Errorf("CheckScope(%q) = %v, want ok %v", tt.scope, err, tt.ok)
			}
		})
	}
}

func TestTripwireIDs(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	format := regexp.MustCompile(`^tw_[0-9a-z]+_[a-z2-7]{16}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := newID(now)
		if !format.MatchString(id) || seen[id] {
			t.Fatalf("id %q is malformed or repeated", id)
		}
		seen[id] = true
	}
	if a, b := newID(now), newID(now.Add(time.Millisecond)); a[:12] >= b[:12] {
		t.Errorf("ids %s and %s do not sort by creation time", a, b)
	}
}

func TestTripwireConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name      string
		edit      func(c *Config)
		wantField string
	}{
		{name: "defaults", edit: func(*Config) {}},
		{name: "tick too short", edit: func(c *Config) { c.Tick = time.Millisecond }, wantField: "tripwires.tick"},
		{name: "no flap cycles", edit: func(c *Config) { c.Quarantine.FlapCycles = 0 }, wantField: "tripwires.quarantine.flap_cycles"},
		{name: "more flap cycles than history keeps", edit: func(c *Config) { c.Quarantine.FlapCycles = TripHistoryCap }, wantField: "tripwires.quarantine.flap_cycles"},
		{name: "flap window too short", edit: func(c *Config) { c.Quarantine.FlapWindow = time.Second }, wantField: "tripwires.quarantine.flap_window"},
		{name: "no source errors", edit: func(c *Config) { c.Quarantine.SourceErrors = 0 }, wantField: "tripwires.quarantine.source_errors"},
		{name: "no tripwires per person", edit: func(c *Config) { c.MaxPerPerson = 0 }, wantField: "tripwires.max_per_person"},
		{name: "a backtest reads nothing", edit: func(c *Config) { c.Backtest.MaxReadings = 0 }, wantField: "tripwires.backtest.max_readings"},
		{name: "no backtests at once", edit: func(c *Config) { c.Backtest.Concurrent = 0 }, wantField: "tripwires.backtest.concurrent"},
		{name: "more per person than in all", edit: func(c *Config) { c.Backtest.ConcurrentPerPerson = 5 }, wantField: "tripwires.backtest.concurrent_per_person"},
		{name: "no fetch time", edit: func(c *Config) { c.FetchBudget.Time = time.Millisecond }, wantField: "tripwires.fetch_budget.time"},
		{name: "no fetch workers", edit: func(c *Config) { c.FetchBudget.Workers = 0 }, wantField: "tripwires.fetch_budget.workers"},
		{name: "no skip log", edit: func(c *Config) { c.SkipLog.PerTripwire = 0 }, wantField: "tripwires.skip_log.per_tripwire"},
		{name: "skip log too long", edit: func(c *Config) { c.SkipLog.PerTripwire = MaxSkipLog + 1 }, wantField: "tripwires.skip_log.per_tripwire"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Tick: 5 * time.Minute, Quarantine: QuarantineConfig{FlapCycles: 6, FlapWindow: time.Hour, SourceErrors: 12},
				MaxPerPerson: 100, Backtest: BacktestConfig{MaxReadings: 5000, Concurrent: 4, ConcurrentPerPerson: 1},
				FetchBudget: FetchBudget{Time: 15 * time.Second, Workers: 2}, SkipLog: SkipLogConfig{PerTripwire: 500}}
			tt.edit(&c)
			err := c.Validate()
			var fe *core.FieldError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("Validate() = %v, want ok", err)
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField):
				t.Errorf("Validate() = %v, want an error naming %s", err, tt.wantField)
			}
		})
	}
}

func TestTripwireTemplatesAreValid(t *testing.T) {
	reg := coretest.Registry()
	reg.Register(core.SourceKind{Kind: "cards.blocked", Value: core.ValueCount,
		Resolve: func(context.Context, string) (core.Observation, error) { return core.Observation{}, nil }})
	want := map[string]string{
		"vault-threshold":    "vault.balance ≥ 45",
		"gi-yellow":          "integrity.gi < 0.7",
		"daedalus-self-ping": "micro-agent.value[DAEDALUS-µ5] < 0.8",
		"agent-offline":      "agent.status[EVE] = offline",
		"breaker-open":       "breaker.state[EVE] = open",
		"card-blocked":       "cards.blocked > 0",
		"card-decision":      "cards.needs_decision > 0",
	}
	if len(templates) != len(want) {
		t.Fatalf("%d templates, want %d", len(templates), len(want))
	}
	for _, tpl := range templates {
		t.Run(tpl.ID, func(t *testing.T) {
			src := tpl.Source
			if tpl.Param != "" {
				src.Param = "EVE"
			}
			d := Definition{Label: tpl.Label, Rationale: tpl.Rationale, Source: src, Condition: tpl.Condition,
				Action: tpl.Action, CooldownSeconds: tpl.CooldownSeconds}
			if err := d.Validate(reg); err != nil {
				t.Fatalf("template does not validate: %v", err)
			}
			cc, err := compileCondition(src, tpl.Condition)
			if err != nil || cc.text() != want[tpl.ID] {
				t.Errorf("template watches %q (%v), want %q", cc.text(), err, want[tpl.ID])
			}
		})
	}
}
