package commands

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core"
)

// The reactions Jarvis puts on everything it asks to be confirmed, where
// people can react.
const (
	YesReaction = bridge.YesReaction
	NoReaction  = bridge.NoReaction
)

// yesWords and noWords are the text answers that count as a tap, for
// networks that cannot react.
var (
	yesWords = map[string]bool{YesReaction: true, "✔️": true, "👍": true, "yes": true, "y": true, "ok": true, "confirm": true, "arm": true, "publish": true, "go": true}
	noWords  = map[string]bool{NoReaction: true, "👎": true, "no": true, "n": true, "dismiss": true, "cancel": true, "stop": true}
)

// ConfirmKind is one kind of thing that can be confirmed.
type ConfirmKind struct {
	Kind string
	// TTL is how long the question stays open.
	TTL time.Duration
	// OnConfirm does the thing, in the same transaction as the answer, and
	// returns the new text of the question notice ("Armed — …"); an error
	// fails the answer, as a handler's does.
	OnConfirm func(e *Event, p core.Pending) (string, error)
	// OnDismiss, if set, returns the new text after ❌; the default says
	// "Dismissed".
	OnDismiss func(e *Event, p core.Pending) string
	// YesWord and NoWord are the replies suggested where reactions cannot
	// be sent ("arm" / "dismiss"); "yes" and "no" by default. Both always
	// count, with the other words of yesWords and noWords.
	YesWord, NoWord string
	// YesDoes and NoDoes say what ✅ and ❌ do ("restart" / "cancel"):
	// the channel tells how to answer, in a room with reactions "React ✅
	// to restart, ❌ to cancel.", after the question's text, and a
	// terminal its [y/N]. Empty when the question's text says it.
	YesDoes, NoDoes string
	// Admin kinds are confirmed only by an admin writing from their own
	// Matrix account, checked again at the tap: a puppet linked to the
	// admin answering the admin's question does nothing.
	Admin bool
	// Native kinds are confirmed only from the requester's own Matrix
	// account, never through a bridge.
	Native bool
	// Undo, if set, takes back what a confirmed question did when a ❌
	// (or a no) comes after its ✅, from anyone: it checks who may, and
	// replies itself.
	Undo func(e *Event, p core.Pending) error
}

// RegisterConfirm adds a kind of confirmation. A kind registered twice
// panics.
func (p *Processor) RegisterConfirm(kinds ...ConfirmKind) {
	for _, k := range kinds {
		if _, dup := p.confirms[k.Kind]; dup || k.Kind == "" || strings.Contains(k.Kind, ":") {
			panic(fmt.Sprintf("commands: confirmation kind %q invalid or registered twice", k.Kind))
		}
		p.confirms[k.Kind] = k
	}
}

// AskConfirm asks the sender to confirm text, in the message's room and
// as its channel puts a question (✅ and ❌ already on it in a Matrix
// room), and records what to do when they say yes.
func (e *Event) AskConfirm(kind, payload, text string) error {
	return e.askConfirmOf(kind, "", e.Sender, e.RoomID, e.channel(), payload, text)
}

// AskConfirmPart is AskConfirm for one of several questions one message
// asks, each told apart by its part: each is answered on its own.
func (e *Event) AskConfirmPart(kind, part, payload, text string) error {
	return e.askConfirmOf(kind, part, e.Sender, e.RoomID, e.channel(), payload, text)
}

// askConfirmOf asks requester, in room (reached through ch), to confirm;
// the question answers the event only when it is in the event's room.
func (e *Event) askConfirmOf(kind, part, requester, room string, ch Channel, payload, text string) error {
	k, ok := e.Proc.confirms[kind]
	if !ok {
		return fmt.Errorf("confirmation kind %q is not registered", kind)
	}
	key := fmt.Sprintf("confirm:%s:%s", kind, e.EventID)
	if part != "" {
		key += ":" + part
	}
	now := e.Proc.deps.Clock.Now()
	err := e.Proc.deps.Pending.AddPending(e.Ctx, core.Pending{
		Key: key, Kind: kind, RoomID: room, Requester: requester, Payload: payload,
		CreatedAt: now, ExpiresAt: now.Add(k.TTL),
	})
	if err != nil {
		return err
	}
	q := core.Question{Key: key, RoomID: room, Text: text, Yes: cmp.Or(k.YesWord, "yes"), No: cmp.Or(k.NoWord, "no"),
		YesDoes: k.YesDoes, NoDoes: k.NoDoes}
	if room == e.RoomID {
		q.TargetEvent = e.EventID
	}
	for _, n := range ch.Ask(q) {
		e.Send(n)
	}
	return nil
}

// answerConfirm resolves a confirmation from a reaction or reply. Answers
// from anyone but the requester, and repeated answers, change nothing and
// say nothing; a late answer is told the question expired.
func (p *Processor) answerConfirm(e *Event, key, answer string) error {
	word := strings.ToLower(strings.Trim(strings.TrimSpace(answer), ".!"))
	yes, no := yesWords[word], noWords[word]
	if !yes && !no {
		return nil
	}
	pending, err := p.deps.Pending.GetPending(e.Ctx, key)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	kind, ok := p.confirms[pending.Kind]
	if !ok {
		zerolog.Ctx(e.Ctx).Warn().Str("kind", pending.Kind).Msg("Answer to a confirmation of an unknown kind")
		return nil
	}
	if no && pending.Resolution == core.Confirmed && kind.Undo != nil {
		return kind.Undo(e, pending)
	}
	now := p.deps.Clock.Now()
	switch err := pending.Resolve(e.Sender, now); {
	case errors.Is(err, core.ErrExpired):
		e.Send(core.Notice{Key: fmt.Sprintf("expired:%s", e.EventID), RoomID: e.RoomID, Kind: core.NoticeMessage,
			Body: "This has expired; say it again and I'll ask anew.", TargetEvent: e.EventID})
		return nil
	case err != nil:
		return nil
	}
	if kind.Admin && !e.Admin() {
		e.Send(core.Notice{Key: fmt.Sprintf("refused:%s", e.EventID), RoomID: e.RoomID, Kind: core.NoticeMessage,
			Body: "Only an admin, from their own Matrix account and not through a bridge, can answer this. Nothing was done.", TargetEvent: e.EventID})
		return nil
	}
	if kind.Native && e.Puppet != "" {
		e.Send(core.Notice{Key: fmt.Sprintf("refused:%s", e.EventID), RoomID: e.RoomID, Kind: core.NoticeMessage,
			Body: "Answer this from your Matrix account, not through a bridge. Nothing was done.", TargetEvent: e.EventID})
		return nil
	}
	resolution := core.Dismissed
	if yes {
		resolution = core.Confirmed
	}
	first, err := p.deps.Pending.ResolvePending(e.Ctx, key, resolution, now)
	if err != nil {
		return err
	}
	if !first {
		return nil
	}
	var text string
	switch {
	case yes:
		if text, err = kind.OnConfirm(e, pending); err != nil {
			return err
		}
	case kind.OnDismiss != nil:
		text = kind.OnDismiss(e, pending)
	default:
		text = fmt.Sprintf("Dismissed by %s.", e.Sender)
	}
	if text != "" {
		e.Send(core.Notice{Key: fmt.Sprintf("%s:%s", key, resolution), RoomID: pending.RoomID, Kind: core.NoticeEdit, Body: text, Target: key})
	}
	return nil
}
