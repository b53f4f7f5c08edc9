package intent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// builtCond is a leaf made into conditions on one source.
type builtCond struct {
	src      core.SourceRef
	subject  string
	conds    []tripwire.Condition
	descs    []string
	group    tripwire.Op // how conds combine ("between": all), or how expansion members do
	member   bool        // a further agent of "any agent"
	label    string
	fallback bool
	// vague: a fallback for a clause that said nothing of a change
	// ("tell me if GI is ok?")
	vague    bool
	conn     connKind
	connWord string
}

// build pairs subjects and conditions, resolves kinds and params, and
// assembles the proposal, or the question to ask instead.
func (p *parser) build(parts []*clause) Watch {
	leaves := p.leaves(parts)
	if len(leaves) == 0 {
		return p.unknown(parts)
	}
	var bs []builtCond
	mine := false
	for _, l := range leaves {
		if !p.resolveKind(l) {
			return p.unknown(parts)
		}
		if q := p.resolveParam(l); q != "" {
			return ask(q)
		}
		b, q := p.condition(l)
		if q != "" {
			return ask(q)
		}
		bs = append(bs, b...)
		mine = mine || l.mine
	}
	return p.assemble(bs, mine)
}

// unknown answers a watch request that names nothing Jarvis can watch:
// a question when it sounds like one, nothing otherwise.
func (p *parser) unknown(parts []*clause) Watch {
	for _, pt := range parts {
		if len(pt.view) > 0 && personalWords[pt.view[0].low] {
			return Watch{}
		}
	}
	cue, fleet := false, false
	for _, pt := range parts {
		cue = cue || p.hasCue(pt)
		for _, t := range pt.view {
			fleet = fleet || fleetWords[t.low]
		}
	}
	switch {
	case p.has(classWatch) && (cue || fleet || len(parts) > 0):
		// "watch X" addressed to Jarvis
	case p.has(classWorried) && (cue || fleet):
	case (p.has(classTell) || p.has(classNotify) || p.has(classJournal)) && (cue || fleet):
	default:
		return Watch{}
	}
	return ask(p.whatCanIWatch())
}

// whatCanIWatch is the question listing the registry's kinds, with an
// alias and the description of each.
func (p *parser) whatCanIWatch() string {
	var b strings.Builder
	b.WriteString("What should I watch? I can watch:")
	for _, k := range p.kinds {
		b.WriteString("\n- ")
		b.WriteString(k.Kind)
		if len(k.Aliases) > 0 {
			b.WriteString(" (" + k.Aliases[0] + ")")
		}
		if k.Description != "" {
			b.WriteString(": " + k.Description)
		}
	}
	return b.String()
}

// resolveKind decides which kind a leaf watches; it reports whether one was
// found.

const askAllOrAny = `Should all of those hold at once, or any one of them? Say it with only "and" or only "or".`

// assemble combines the built conditions into one draft: compound when
// there are several, with the action, cooldown, label and notes.
func (p *parser) assemble(bs []builtCond, mine bool) Watch {
	var conds []tripwire.Condition
	var srcs []core.SourceRef
	var descs []string
	var label strings.Builder
	combine := tripwire.Op("")
	agree := func(op tripwire.Op) bool {
		if combine == "" {
			combine = op
		}
		return combine == op
	}
	fallbacks, while := 0, false
	for i, b := range bs {
		if i > 0 {
			op := tripwire.OpAll
			switch {
			case b.member:
				op = b.group
			case b.conn == connAny:
				op = tripwire.OpAny
			}
			if !agree(op) {
				return ask(askAllOrAny)
			}
		}
		if len(b.conds) > 1 && !agree(b.group) {
			return ask(askAllOrAny)
		}
		for j, c := range b.conds {
			conds = append(conds, c)
			srcs = append(srcs, b.src)
			if b.descs[j] != "" {
				descs = append(descs, b.descs[j])
			}
		}
		if b.fallback {
			fallbacks++
		}
		while = while || b.connWord == "while" || b.connWord == "whilst"
		if b.label == "" {
			continue
		}
		if label.Len() > 0 {
			switch {
			case b.conn == connAny:
				label.WriteString(" or ")
			case b.conn == connAll && b.connWord != "":
				label.WriteString(" " + b.connWord + " ")
			case b.conn == connAll:
				label.WriteString(" and ")
			default:
				label.WriteString(", ")
			}
		}
		label.WriteString(b.label)
	}
	if p.question && !p.has(classWatch) && !slices.ContainsFunc(bs, func(b builtCond) bool { return !b.vague }) {
		return Watch{} // "can you tell me if GI is ok?" asks how GI is
	}
	if len(conds) > 1 && fallbacks == len(bs) {
		combine = tripwire.OpAny // "watch GI and EVE": either changing is news
	}
	if len(conds) > tripwire.MaxSubConditions {
		return ask(fmt.Sprintf("I can combine at most %d conditions in one tripwire. Which matter most?", tripwire.MaxSubConditions))
	}
	joiner := " and "
	switch {
	case combine == tripwire.OpAny:
		joiner = " or "
	case while:
		joiner = " while "
	}
	d := tripwire.Draft{Source: srcs[0], Condition: conds[0]}
	desc := strings.Join(descs, joiner)
	if len(conds) > 1 {
		if c, ok := collapseIn(combine, srcs, conds); ok {
			d.Condition = c
			values := make([]string, 0, len(conds))
			for _, v := range c.Threshold.([]any) {
				values = append(values, fmt.Sprint(v))
			}
			desc = bs[0].subject + " is " + joinOr(values)
		} else {
			sub := make([]tripwire.Condition, len(conds))
			for i, c := range conds {
				sub[i] = c
				if srcs[i] != srcs[0] {
					src := srcs[i]
					sub[i].Source = &src
				}
			}
			d.Condition = tripwire.Condition{Op: combine, Conditions: sub}
		}
	}
	push := p.has(classTell) || p.has(classNotify) || p.has(classWorried) || p.pushOn
	d.Action = &tripwire.Action{Journal: true, Push: push && !p.pushOff}
	cooldown := tripwire.DefaultCooldownSeconds
	if p.cooldown != nil {
		cooldown = *p.cooldown
	}
	d.CooldownSeconds = &cooldown
	for _, l := range []string{label.String(), desc, srcs[0].Kind, "Tripwire"} {
		if d.Label = cleanLabel(l); d.Label != "" {
			break
		}
	}
	note := joinNotes(p.notes...)
	if fallbacks > 0 {
		note = joinNotes("No number or direction was given, so this fires whenever the value changes.", note)
	}
	return Watch{Kind: Proposal, Draft: d, Description: singleLine(desc), Note: note, Mine: mine}
}

// collapseIn turns "mode is yellow or mode is red" into "mode in [yellow,
// red]".
func collapseIn(combine tripwire.Op, srcs []core.SourceRef, conds []tripwire.Condition) (tripwire.Condition, bool) {
	if combine != tripwire.OpAny {
		return tripwire.Condition{}, false
	}
	var values []any
	for i, c := range conds {
		if srcs[i] != srcs[0] || c.Op != tripwire.OpEQ {
			return tripwire.Condition{}, false
		}
		if !slices.Contains(values, c.Threshold) {
			values = append(values, c.Threshold)
		}
	}
	return tripwire.Condition{Op: tripwire.OpIn, Threshold: values}, true
}
