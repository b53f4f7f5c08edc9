package commands

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
)

// greetings may come before Jarvis's name: "hi Jarvis", "hey jarvis, …".
var greetings = []string{"hi", "hey", "hello", "ok", "okay", "dear", "yo", "good morning", "good evening", "morning", "thanks", "thank you"}

// AddNames adds the names a message may start with to be addressed to
// Jarvis ("Jarvis, any cards blocked?"): its user name and display name.
// Case does not matter.
func (p *Processor) AddNames(names ...string) {
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n != "" && !strings.ContainsAny(n, "\n") {
			p.names = append(p.names, n)
		}
	}
}

// stripName returns body without the name that starts it (after an
// optional greeting, before an optional comma or colon), and whether
// there was one.
func (p *Processor) stripName(body string) (string, bool) {
	low := strings.ToLower(body)
	for _, g := range append([]string{""}, greetings...) {
		rest := low
		if g != "" {
			var ok bool
			if rest, ok = cutWord(low, g); !ok {
				continue
			}
			rest = strings.TrimLeft(rest, " ,!")
		}
		for _, n := range p.names {
			after, ok := cutWord(rest, n)
			if !ok {
				continue
			}
			after = strings.TrimLeftFunc(after, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",:;-—", r) })
			return strings.TrimSpace(body[len(body)-len(after):]), true
		}
	}
	return body, false
}

// cutWord cuts word from the start of s when it is a whole word there.
func cutWord(s, word string) (string, bool) {
	rest, ok := strings.CutPrefix(s, word)
	if !ok || (rest != "" && (unicode.IsLetter(rune(rest[0])) || unicode.IsDigit(rune(rest[0])) || rest[0] == '_')) {
		return s, false
	}
	return rest, true
}

// HandleReply acts, exactly once, on a text reply to the Matrix event
// target. A reply to a notice that takes answers (a proposal, a
// question) answers it; a reply to any other message of Jarvis's is a
// message addressed to it, and a reply to someone else's message is a
// message like any other.
func (p *Processor) HandleReply(ctx context.Context, msg Message, target string) {
	answers, ours, err := p.takesAnswers(ctx, target)
	if err != nil {
		zerolog.Ctx(ctx).Err(err).Msg("Failed to look up the message replied to")
		core.NotHandled(ctx, err)
		return
	}
	if answers {
		p.HandleAnswer(ctx, msg, target)
		return
	}
	msg.Addressed = msg.Addressed || ours
	p.Handle(ctx, msg)
}

// HandleInThread acts, exactly once, on a message written in the thread
// rooted at root that replies to nothing in particular (its client named
// latest, the thread's latest event, only for clients without threads).
// When latest, or else root, takes answers (a proposal asked in the
// thread, an alert that takes `mine`), the message answers it; otherwise
// it is a message like any other: being in a thread Jarvis started is not
// being spoken to.
func (p *Processor) HandleInThread(ctx context.Context, msg Message, root, latest string) {
	for _, target := range []string{latest, root} {
		if target == "" {
			continue
		}
		answers, _, err := p.takesAnswers(ctx, target)
		if err != nil {
			zerolog.Ctx(ctx).Err(err).Msg("Failed to look up the thread's messages")
			core.NotHandled(ctx, err)
			return
		}
		if answers {
			p.HandleAnswer(ctx, msg, target)
			return
		}
	}
	p.Handle(ctx, msg)
}

// takesAnswers says whether the Matrix event is a notice of Jarvis's that
// takes answers, and whether it is one of Jarvis's at all.
func (p *Processor) takesAnswers(ctx context.Context, eventID string) (answers, ours bool, err error) {
	key, err := p.deps.Notices.KeyForEvent(ctx, eventID)
	if errors.Is(err, core.ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	fn, _ := p.answerFunc(key)
	return fn != nil, true, nil
}

// addressedIntent is tried, before the other intents, on messages
// addressed to Jarvis only: reminders, tasks and notes, then questions.
// Said in a shared room without naming Jarvis, they are talk between
// people.
func (p *Processor) addressedIntent(text string) (string, []string, bool) {
	for _, intent := range p.askIntents {
		if name, args, ok := intent(text); ok {
			return name, args, true
		}
	}
	return p.askIntent(text)
}

// AddAddressedIntent adds a sentence recogniser tried only on messages
// addressed to Jarvis; the first that matches wins.
func (p *Processor) AddAddressedIntent(intent Intent) { p.askIntents = append(p.askIntents, intent) }

// notUnderstood answers an addressed message no intent understood: one
// short line with what Jarvis can do here, and `!help`. It repeats
// nothing of what was said.
func (p *Processor) notUnderstood(e *Event, greeted bool) {
	f := p.features
	var can []string
	if f.breakers != nil || f.cards != nil {
		can = append(can, "answer questions such as “any cards blocked?”")
	}
	if f.notebook != nil {
		can = append(can, "keep your tasks and notes (“note: the staging DB password rotates monthly”)")
	}
	if f.reminders != nil {
		can = append(can, "remind you (“remind me to call the bank tomorrow at 10”)")
	}
	if f.tripwires != nil {
		can = append(can, "watch something for you (“tell me when GI drops below 0.70”)")
	}
	if len(can) > 3 {
		can = can[:3]
	}
	lead := "I didn't understand that."
	if greeted {
		lead = "Hello!"
	}
	if len(can) == 0 {
		e.Reply("%s `%shelp` lists what I can do.", lead, p.cfg.Prefix)
		return
	}
	e.Reply("%s I can %s; `%shelp` lists the rest.", lead, joinAnd(can), p.cfg.Prefix)
}

// joinAnd joins "a", "b" and "c" as "a, b or c".
func joinAnd(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
