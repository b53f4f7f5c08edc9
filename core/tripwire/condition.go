package tripwire

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// Op is a condition operator.
type Op string

// Condition operators. The compound ops all and any combine up to
// MaxSubConditions sub-conditions, each of which may watch its own source.
const (
	OpLT      Op = "lt"
	OpLTE     Op = "lte"
	OpGT      Op = "gt"
	OpGTE     Op = "gte"
	OpEQ      Op = "eq"
	OpNEQ     Op = "neq"
	OpIn      Op = "in"
	OpChanged Op = "changed"
	OpAll     Op = "all"
	OpAny     Op = "any"
)

// Limits on a condition's shape.
const (
	MaxSubConditions = 4
	MaxInValues      = 32
)

var opSymbols = map[Op]string{
	OpLT: "<", OpLTE: "≤", OpGT: ">", OpGTE: "≥", OpEQ: "=", OpNEQ: "≠", OpIn: "in", OpChanged: "changed",
}

// Condition is what a tripwire tests its source's value against:
//
//	{op: lt|lte|gt|gte, threshold: number}
//	{op: eq|neq, threshold: string|number|boolean}
//	{op: in, threshold: [values]}
//	{op: changed}                 fires on any change from the last observation
//	{op: all|any, conditions: [up to 4 of the above, each with an optional source]}
type Condition struct {
	Op        Op  `json:"op"`
	Threshold any `json:"threshold,omitempty"`
	// Source is the source a sub-condition of all/any watches; left out,
	// it watches the tripwire's own source.
	Source     *core.SourceRef `json:"source,omitempty"`
	Conditions []Condition     `json:"conditions,omitempty"`
}

// validate checks the condition; field names it in errors
// ("condition", "condition.conditions[1]").
func (c Condition) validate(field string, sub bool, reg *core.SourceRegistry) error {
	switch c.Op {
	case OpAll, OpAny:
		switch {
		case sub:
			return core.Invalid(field+".op", "%s cannot be nested", c.Op)
		case c.Threshold != nil:
			return core.Invalid(field+".threshold", "%s takes conditions, not a threshold", c.Op)
		case c.Source != nil:
			return core.Invalid(field+".source", "put the source on the tripwire or on each sub-condition")
		case len(c.Conditions) == 0:
			return core.Invalid(field+".conditions", "%s needs at least one condition", c.Op)
		case len(c.Conditions) > MaxSubConditions:
			return core.Invalid(field+".conditions", "at most %d conditions", MaxSubConditions)
		}
		for i, s := range c.Conditions {
			if err := s.validate(fmt.Sprintf("%s.conditions[%d]", field, i), true, reg); err != nil {
				return err
			}
		}
		return nil
	case "":
		return core.Invalid(field+".op", "is required")
	}
	if _, ok := opSymbols[c.Op]; !ok {
		return core.Invalid(field+".op", "unknown op %q (lt lte gt gte eq neq in changed all any)", c.Op)
	}
	if len(c.Conditions) > 0 {
		return core.Invalid(field+".conditions", "only all and any take conditions")
	}
	if c.Source != nil {
		if !sub {
			return core.Invalid(field+".source", "put the source on the tripwire")
		}
		if err := reg.Check(field+".source", *c.Source); err != nil {
			return err
		}
	}
	return checkThreshold(field+".threshold", c.Op, c.Threshold)
}

func checkThreshold(field string, op Op, t any) error {
	switch op {
	case OpChanged:
		if t != nil {
			return core.Invalid(field, "changed takes no threshold")
		}
	case OpLT, OpLTE, OpGT, OpGTE:
		v, ok := core.NormalizeValue(t)
		if _, num := v.(float64); !ok || !num {
			return core.Invalid(field, "%s needs a number", op)
		}
	case OpEQ, OpNEQ:
		if _, ok := core.NormalizeValue(t); !ok {
			return core.Invalid(field, "%s needs a string, number or boolean", op)
		}
	case OpIn:
		list, ok := t.([]any)
		switch {
		case !ok || len(list) == 0:
			return core.Invalid(field, "in needs a non-empty list")
		case len(list) > MaxInValues:
			return core.Invalid(field, "in takes at most %d values", MaxInValues)
		}
		for i, v := range list {
			if _, ok := core.NormalizeValue(v); !ok {
				return core.Invalid(fmt.Sprintf("%s[%d]", field, i), "must be a string, number or boolean")
			}
		}
	}
	return nil
}

// String renders the condition for people, e.g. "< 0.7" or
// "all of (integrity.gi < 0.7; lane.sentiment = degraded)".
func (c Condition) String() string {
	if c.Op == OpAll || c.Op == OpAny {
		parts := make([]string, len(c.Conditions))
		for i, s := range c.Conditions {
			parts[i] = s.String()
			if s.Source != nil {
				parts[i] = s.Source.String() + " " + parts[i]
			}
		}
		return string(c.Op) + " of (" + strings.Join(parts, "; ") + ")"
	}
	if c.Op == OpChanged {
		return "changed"
	}
	return opSymbols[c.Op] + " " + formatValue(c.Threshold)
}

// compiledCondition is a condition ready to evaluate: its leaves, each with
// the source it watches, and how they combine.
type compiledCondition struct {
	combine Op // "" for a single leaf, OpAll or OpAny
	leaves  []leaf
	// watchesChange is true when a leaf uses changed, so last observations
	// must be kept.
	watchesChange bool
}

type leaf struct {
	source core.SourceRef
	slot   int    // the source's slot in the evaluator's view
	gen    uint64 // the slot's generation
	op     Op
	num    float64
	values []any
	text   string // "integrity.gi < 0.7"
}

// compileCondition prepares a valid condition on the tripwire's source.
func compileCondition(src core.SourceRef, c Condition) (*compiledCondition, error) {
	cc := &compiledCondition{}
	subs := []Condition{c}
	if c.Op == OpAll || c.Op == OpAny {
		cc.combine, subs = c.Op, c.Conditions
	}
	for _, s := range subs {
		l := leaf{source: src, op: s.Op}
		if s.Source != nil {
			l.source = *s.Source
		}
		switch s.Op {
		case OpLT, OpLTE, OpGT, OpGTE:
			v, _ := core.NormalizeValue(s.Threshold)
			n, ok := v.(float64)
			if !ok {
				return nil, fmt.Errorf("%s threshold %v is not a number", s.Op, s.Threshold)
			}
			l.num = n
		case OpEQ, OpNEQ:
			v, ok := core.NormalizeValue(s.Threshold)
			if !ok {
				return nil, fmt.Errorf("%s threshold %v is not a value", s.Op, s.Threshold)
			}
			l.values = []any{v}
		case OpIn:
			list, _ := s.Threshold.([]any)
			for _, x := range list {
				v, ok := core.NormalizeValue(x)
				if !ok {
					return nil, fmt.Errorf("in value %v is not a value", x)
				}
				l.values = append(l.values, v)
			}
		case OpChanged:
			cc.watchesChange = true
		default:
			return nil, fmt.Errorf("unknown op %q", s.Op)
		}
		l.text = l.source.String() + " " + s.String()
		cc.leaves = append(cc.leaves, l)
	}
	return cc, nil
}

// match tests one observed value; last is the previous observation (nil
// when there is none). A value of the wrong type is an error, not a miss.
func (l leaf) match(v, last any) (bool, error) {
	switch l.op {
	case OpLT, OpLTE, OpGT, OpGTE:
		n, ok := asNumber(v)
		if !ok {
			return false, fmt.Errorf("%s is %s, not a number", l.source, formatValue(v))
		}
		switch l.op {
		case OpLT:
			return n < l.num, nil
		case OpLTE:
			return n <= l.num, nil
		case OpGT:
			return n > l.num, nil
		default:
			return n >= l.num, nil
		}
	case OpEQ:
		return equalValues(v, l.values[0]), nil
	case OpNEQ:
		return !equalValues(v, l.values[0]), nil
	case OpIn:
		for _, x := range l.values {
			if equalValues(v, x) {
				return true, nil
			}
		}
		return false, nil
	case OpChanged:
		// The first observation only records the value.
		return last != nil && !sameValue(v, last), nil
	}
	return false, fmt.Errorf("unknown op %q", l.op)
}

// asNumber reads a number, accepting a string that spells one.
func asNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// equalValues compares an observation with a threshold: numbers by value
// (a string that spells a number counts), strings without regard to case,
// booleans as booleans (or the strings "true" and "false").
func equalValues(v, t any) bool {
	switch tv := t.(type) {
	case float64:
		n, ok := asNumber(v)
		return ok && n == tv
	case bool:
		switch x := v.(type) {
		case bool:
			return x == tv
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			return err == nil && b == tv
		}
		return false
	case string:
		switch x := v.(type) {
		case string:
			return strings.EqualFold(strings.TrimSpace(x), strings.TrimSpace(tv))
		case float64:
			n, ok := asNumber(tv)
			return ok && n == x
		case bool:
			b, err := strconv.ParseBool(strings.TrimSpace(tv))
			return err == nil && b == x
		}
	}
	return false
}

// sameValue reports whether two observations are the very same value, for
// changed.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return false
}

// formatValue renders a value for people.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if n, ok := core.NormalizeValue(v); ok {
		return formatValue(n)
	}
	return fmt.Sprint(v)
}
