package tripwire

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
)

func TestConditionMatch(t *testing.T) {
	gi := core.SourceRef{Kind: "integrity.gi"}
	for _, tt := range []struct {
		name    string
		cond    Condition
		value   any
		last    any
		want    bool
		wantErr bool
	}{
		{name: "lt below", cond: Condition{Op: OpLT, Threshold: 0.7}, value: 0.69, want: true},
		{name: "lt at threshold", cond: Condition{Op: OpLT, Threshold: 0.7}, value: 0.7},
		{name: "lte at threshold", cond: Condition{Op: OpLTE, Threshold: 0.7}, value: 0.7, want: true},
		{name: "lte above", cond: Condition{Op: OpLTE, Threshold: 0.7}, value: 0.71},
		{name: "gt above", cond: Condition{Op: OpGT, Threshold: 0}, value: 1.0, want: true},
		{name: "gt at threshold", cond: Condition{Op: OpGT, Threshold: 0}, value: 0.0},
		{name: "gte at threshold", cond: Condition{Op: OpGTE, Threshold: 45}, value: 45.0, want: true},
		{name: "gte below", cond: Condition{Op: OpGTE, Threshold: 45}, value: 44.9},
		{name: "numeric op reads a numeric string", cond: Condition{Op: OpLT, Threshold: 0.7}, value: " 0.5 ", want: true},
		{name: "numeric op on a word is an error", cond: Condition{Op: OpLT, Threshold: 0.7}, value: "degraded", wantErr: true},
		{name: "numeric op on a boolean is an error", cond: Condition{Op: OpGT, Threshold: 0}, value: true, wantErr: true},
		{name: "eq string ignores case", cond: Condition{Op: OpEQ, Threshold: "offline"}, value: "Offline", want: true},
		{name: "eq string differs", cond: Condition{Op: OpEQ, Threshold: "offline"}, value: "online"},
		{name: "eq number", cond: Condition{Op: OpEQ, Threshold: 3}, value: 3.0, want: true},
		{name: "eq number against numeric string", cond: Condition{Op: OpEQ, Threshold: 3}, value: "3", want: true},
		{name: "eq boolean", cond: Condition{Op: OpEQ, Threshold: true}, value: true, want: true},
		{name: "eq boolean against string", cond: Condition{Op: OpEQ, Threshold: false}, value: "false", want: true},
		{name: "eq string threshold against number", cond: Condition{Op: OpEQ, Threshold: "2"}, value: 2.0, want: true},
		{name: "eq mixed types never match", cond: Condition{Op: OpEQ, Threshold: true}, value: 1.0},
		{name: "neq differs", cond: Condition{Op: OpNEQ, Threshold: "closed"}, value: "open", want: true},
		{name: "neq same", cond: Condition{Op: OpNEQ, Threshold: "closed"}, value: "closed"},
		{name: "in member", cond: Condition{Op: OpIn, Threshold: []any{"open", "half-open"}}, value: "half-open", want: true},
		{name: "in non-member", cond: Condition{Op: OpIn, Threshold: []any{"open", "half-open"}}, value: "closed"},
		{name: "in numbers", cond: Condition{Op: OpIn, Threshold: []any{1.0, 2.0}}, value: 2.0, want: true},
		{name: "changed: first observation never fires", cond: Condition{Op: OpChanged}, value: "online", last: nil},
		{name: "changed: same value", cond: Condition{Op: OpChanged}, value: "online", last: "online"},
		{name: "changed: new value", cond: Condition{Op: OpChanged}, value: "late", last: "online", want: true},
		{name: "changed: same number", cond: Condition{Op: OpChanged}, value: 0.5, last: 0.5},
		{name: "changed: type change counts", cond: Condition{Op: OpChanged}, value: "1", last: 1.0, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cc, err := compileCondition(gi, tt.cond)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, err := cc.leaves[0].match(tt.value, tt.last)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("match(%v, last %v) = %v, %v; want %v, error %v", tt.value, tt.last, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestConditionValidate(t *testing.T) {
	reg := coretest.Registry()
	for _, tt := range []struct {
		name      string
		json      string
		wantField string
	}{
		{name: "lt with a number", json: `{"op":"lt","threshold":0.7}`},
		{name: "eq with a boolean", json: `{"op":"eq","threshold":false}`},
		{name: "in with values", json: `{"op":"in","threshold":["open","half-open"]}`},
		{name: "changed", json: `{"op":"changed"}`},
		{name: "all with sources", json: `{"op":"all","conditions":[{"op":"lt","threshold":0.7},{"op":"eq","threshold":"degraded","source":{"kind":"lane.sentiment"}}]}`},
		{name: "missing op", json: `{"threshold":1}`, wantField: "condition.op"},
		{name: "unknown op", json: `{"op":"near","threshold":1}`, wantField: "condition.op"},
		{name: "lt without threshold", json: `{"op":"lt"}`, wantField: "condition.threshold"},
		{name: "lt with a string", json: `{"op":"lt","threshold":"low"}`, wantField: "condition.threshold"},
		{name: "eq with an object", json: `{"op":"eq","threshold":{"a":1}}`, wantField: "condition.threshold"},
		{name: "in with nothing", json: `{"op":"in","threshold":[]}`, wantField: "condition.threshold"},
		{name: "in with a list inside", json: `{"op":"in","threshold":["a",["b"]]}`, wantField: "condition.threshold[1]"},
		{name: "changed with a threshold", json: `{"op":"changed","threshold":1}`, wantField: "condition.threshold"},
		{name: "source on a single condition", json: `{"op":"lt","threshold":1,"source":{"kind":"vault.balance"}}`, wantField: "condition.source"},
		{name: "conditions on a single condition", json: `{"op":"lt","threshold":1,"conditions":[{"op":"changed"}]}`, wantField: "condition.conditions"},
		{name: "all without conditions", json: `{"op":"all"}`, wantField: "condition.conditions"},
		{name: "any with five conditions", json: `{"op":"any","conditions":[{"op":"changed"},{"op":"changed"},{"op":"changed"},{"op":"changed"},{"op":"changed"}]}`, wantField: "condition.conditions"},
		{name: "nested all", json: `{"op":"all","conditions":[{"op":"any","conditions":[{"op":"changed"}]}]}`, wantField: "condition.conditions[0].op"},
		{name: "bad sub-condition threshold", json: `{"op":"all","conditions":[{"op":"changed"},{"op":"gt"}]}`, wantField: "condition.conditions[1].threshold"},
		{name: "unknown sub-condition source", json: `{"op":"any","conditions":[{"op":"changed","source":{"kind":"weather"}}]}`, wantField: "condition.conditions[0].source.kind"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Condition
			if err := json.Unmarshal([]byte(tt.json), &c); err != nil {
				t.Fatal(err)
			}
			err := c.validate("condition", false, reg)
			var fe *core.FieldError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("validate() = %v, want ok", err)
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField):
				t.Errorf("validate() = %v, want an error naming %s", err, tt.wantField)
			}
		})
	}
}

func TestConditionString(t *testing.T) {
	for _, tt := range []struct {
		cond Condition
		want string
	}{
		{Condition{Op: OpLT, Threshold: 0.7}, "< 0.7"},
		{Condition{Op: OpGTE, Threshold: 45.0}, "≥ 45"},
		{Condition{Op: OpEQ, Threshold: "offline"}, "= offline"},
		{Condition{Op: OpNEQ, Threshold: true}, "≠ true"},
		{Condition{Op: OpIn, Threshold: []any{"open", 2.0}}, "in [open, 2]"},
		{Condition{Op: OpChanged}, "changed"},
		{Condition{Op: OpAny, Conditions: []Condition{
			{Op: OpLT, Threshold: 0.7},
			{Op: OpEQ, Threshold: "degraded", Source: &core.SourceRef{Kind: "lane.sentiment"}},
		}}, "any of (< 0.7; lane.sentiment = degraded)"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.cond.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
