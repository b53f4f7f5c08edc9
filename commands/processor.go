// Package commands turns chat input into actions: `!` commands from one
// table of handlers, sentences that become the same commands, and
// reactions. Replies go through the outbox.
package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

// Config is the commands' part of the configuration (from the bot section).
type Config struct {
	// Prefix starts a command, "!" by default.
	Prefix string
	// Admins may run admin-only commands.
	Admins []string
	// SenderLimit bounds how fast one sender is answered; zero sets no
	// limit.
	SenderLimit SenderLimit
	// Zone is the time zone of a person who has not set theirs (UTC when
	// nil).
	Zone *time.Location
	// Snooze is how long ⏰ puts a reminder off (DefaultSnooze when not
	// positive).
	Snooze time.Duration
}

// HandledStore remembers which events were acted on.
type HandledStore interface {
	// MarkHandled returns false when the event was handled before.
	MarkHandled(ctx context.Context, eventID string, at time.Time) (bool, error)
}

// NoticeLookup finds which of Jarvis's notices a Matrix event delivered.
type NoticeLookup interface {
	KeyForEvent(ctx context.Context, eventID string) (string, error)
}

// Deps are what the processor needs from the rest of Jarvis.
type Deps struct {
	Tx      core.Transactor
	Outbox  core.Outbox
	Handled HandledStore
	Notices NoticeLookup
	Pending core.PendingStore
	// Excerpts keeps what people say outside commands, tagged with trust.
	Excerpts core.ExcerptStore
	// Turns keeps the model turns not yet answered, so that one a crash
	// cut short is resumed (nil: a turn is answered in the transaction
	// that marks its message handled, after the model answered).
	Turns core.ModelTurnStore
	Clock core.Clock
	// Chat, when set, hears that a person waits while a message is
	// handled, so that agents' intake yields.
	Chat *core.ChatFirst
}

// Message is one chat message from an allowed person.
type Message struct {
	RoomID  string
	EventID string
	// Sender is the citizen: a puppet's linked Matrix account, or the
	// sender itself.
	Sender string
	// Puppet is the bridged user who wrote, when it was one.
	Puppet string
	// Network is where the sender writes from ("matrix", "telegram", …).
	Network string
	// Relay marks a message a bridge relayed for someone; it authorises
	// nothing. RelayedName is whom it names.
	Relay       bool
	RelayedName string
	// Trust is the trust of the text: native, linked, bridged or relay;
	// when empty, the processor derives it from the fields above.
	Trust core.Trust
	// Room is what the room lets people do (reactions or not).
	Room bridge.Room
	// Channel is how the person reached Jarvis; nil means the Matrix room
	// Room describes.
	Channel Channel `json:"-"`
	// Operator marks the person at the workspace's own machine (the
	// console): an admin whatever the admin list says.
	Operator bool
	Body     string
	// Addressed is set by the channel when the message is addressed to
	// Jarvis: it mentions Jarvis, replies to one of its messages, or is in
	// a direct room with it. (A message that starts with Jarvis's name is
	// found addressed by the processor.) An addressed message always gets
	// an answer.
	Addressed bool
	// Sent is the homeserver's timestamp of the message.
	Sent time.Time
	// ThreadRoot is the Matrix event ID of the thread the message was
	// written in, when it was: replies to it go into that thread.
	ThreadRoot string
}

// withTrust fills in a message's trust from who sent it when the channel
// left it empty.
func (m Message) withTrust() Message {
	if m.Trust == "" {
		m.Trust = bridge.Sender{UserID: m.Sender, Puppet: m.Puppet, Network: m.Network, Relay: m.Relay}.Trust()
	}
	return m
}

// Outcome is how the processor dealt with a message, for a channel that
// reports it (the console's exit status).
type Outcome string

// The outcomes of a message.
const (
	// Answered: the message was acted on and answered.
	Answered Outcome = "answered"
	// Refused: Jarvis would not act on it (an unknown command, an admin
	// verb from someone else, a sender past its limit, a relayed command).
	Refused Outcome = "refused"
	// Failed: acting on it failed on Jarvis's side; nothing changed.
	Failed Outcome = "failed"
	// Ignored: there was nothing to act on, or it was acted on before.
	Ignored Outcome = "ignored"
)

// Processor dispatches chat messages to the command table.
type Processor struct {
	cfg      Config
	deps     Deps
	byName   map[string]*Handler
	handlers []*Handler
	answers  map[string]AnswerFunc
	confirms map[string]ConfirmKind
	intents  []Intent
	// askIntents are tried on addressed messages only; names are the
	// names that address Jarvis at the start of a message.
	askIntents []Intent
	names      []string
	admins     map[string]bool
	limiter    *senderLimiter

	// features are the features added, each holding what its handlers
	// act on; AddFeatures wires them to one another.
	features featureSet

	// background runs turns with the model off the channel's loop (nil:
	// in line); turnLocks hold one person's turns in order.
	background func(fn func())
	turnLocks  sync.Map
}

// Intent recognises a sentence that asks for a command, and names the
// command and its arguments: sentences become the same commands, so
// permissions, logging and replies stay in one place.
type Intent func(text string) (command string, args []string, ok bool)

// AnswerFunc handles a person's answer to one of Jarvis's notices: a
// reaction (answer is the emoji) or a text reply (answer is the text).
// key is the notice's outbox key.
type AnswerFunc func(e *Event, key, answer string) error

// NewProcessor builds a processor with the built-in commands (`help`,
// `ping`); AddFeatures adds those of the features.
func NewProcessor(cfg Config, deps Deps) *Processor {
	if cfg.Prefix == "" {
		cfg.Prefix = "!"
	}
	if cfg.Snooze <= 0 {
		cfg.Snooze = DefaultSnooze
	}
	p := &Processor{cfg: cfg, deps: deps, byName: map[string]*Handler{}, answers: map[string]AnswerFunc{},
		confirms: map[string]ConfirmKind{}, admins: map[string]bool{}, limiter: newSenderLimiter(cfg.SenderLimit)}
	for _, a := range cfg.Admins {
		p.admins[a] = true
	}
	p.Register(builtins...)
	p.OnAnswer("confirm:", p.answerConfirm)
	p.RegisterConfirm(p.commandConfirm())
	return p
}

// Register adds handlers to the table; AddFeatures registers Jarvis's
// own. A name or alias used twice panics: that is a programming error
// caught at start-up.
func (p *Processor) Register(handlers ...*Handler) {
	for _, h := range handlers {
		h.validate("")
		for _, name := range h.names() {
			if _, dup := p.byName[name]; dup {
				panic(fmt.Sprintf("commands: %q registered twice", name))
			}
			p.byName[name] = h
		}
		p.handlers = append(p.handlers, h)
	}
}

// OnAnswer routes answers to notices whose key starts with prefix (e.g.
// "confirm:") to fn. A prefix used twice panics.
func (p *Processor) OnAnswer(prefix string, fn AnswerFunc) {
	if _, dup := p.answers[prefix]; dup {
		panic(fmt.Sprintf("commands: answer prefix %q registered twice", prefix))
	}
	p.answers[prefix] = fn
}

// HandleAnswer acts, exactly once, on a reaction to or a reply to the
// Matrix event target. Answers to anything but a notice with a registered
// prefix are ignored.
func (p *Processor) HandleAnswer(ctx context.Context, msg Message, target string) Outcome {
	msg = msg.withTrust()
	if msg.Relay || !p.admit(ctx, msg) {
		return Refused
	}
	key, err := p.deps.Notices.KeyForEvent(ctx, target)
	if err != nil {
		if !errors.Is(err, core.ErrNotFound) {
			zerolog.Ctx(ctx).Err(err).Msg("Failed to look up the notice answered")
			return Failed
		}
		return Ignored
	}
	return p.answer(ctx, msg, key)
}

// HandleAnswerTo acts, exactly once, on an answer to the notice with
// the given key, from a channel that names the notice rather than a
// Matrix event (the console).
func (p *Processor) HandleAnswerTo(ctx context.Context, msg Message, key string) Outcome {
	msg = msg.withTrust()
	if msg.Relay || !p.admit(ctx, msg) {
		return Refused
	}
	return p.answer(ctx, msg, key)
}

func (p *Processor) answer(ctx context.Context, msg Message, key string) Outcome {
	fn, prefix := p.answerFunc(key)
	if fn == nil {
		return Ignored
	}
	answer := strings.TrimSpace(msg.Body)
	return p.exec(ctx, msg, &Event{Message: msg, Proc: p, Command: "answer " + strings.TrimSuffix(prefix, ":")}, func(evt *Event) error {
		return fn(evt, key, answer)
	})
}

func (p *Processor) answerFunc(key string) (AnswerFunc, string) {
	best := ""
	for prefix := range p.answers {
		if strings.HasPrefix(key, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	return p.answers[best], best
}

// converse keeps a message that is not a command as a conversation
// excerpt, tagged with its trust. External text shaped like a standing
// instruction is held, never acted on, and the sender is told how a
// native account can ratify it.
func (p *Processor) converse(ctx context.Context, msg Message) Outcome {
	if msg.Relay || (strings.TrimSpace(msg.Body) == "" && !msg.Addressed) {
		return Ignored
	}
	// The model, when there is one, is asked outside the transaction: a
	// turn takes seconds, and the store is not held for it.
	if p.wantsModel(msg) {
		if p.background != nil && p.deps.Turns != nil && msg.Channel == nil {
			return p.startTurn(ctx, msg)
		}
		if p.background != nil {
			p.background(func() { p.converseWithModel(ctx, msg) })
			return Answered
		}
		return p.converseWithModel(ctx, msg)
	}
	return p.answerConversation(ctx, msg, nil)
}

// converseWithModel answers a message through the model, one turn at a
// time per person, so that their answers come in the order they asked.
func (p *Processor) converseWithModel(ctx context.Context, msg Message) Outcome {
	v, _ := p.turnLocks.LoadOrStore(msg.Sender, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	defer mu.Unlock()
	return p.answerConversation(ctx, msg, p.runModel(ctx, msg))
}

// RunModelTurnsWith runs turns with the model through bg, off the
// channel's loop: a slow model then holds up nobody else's messages. bg
// must have them joined before the store closes. Without it (the
// console, tests) a turn runs in line.
func (p *Processor) RunModelTurnsWith(bg func(fn func())) { p.background = bg }

// answerConversation keeps a message that is not a command as an
// excerpt and answers it: with the model's turn when it had one, with the
// grammar otherwise.
func (p *Processor) answerConversation(ctx context.Context, msg Message, turn *modelTurn) Outcome {
	return p.exec(ctx, msg, &Event{Message: msg, Proc: p, Command: "converse"}, func(e *Event) error {
		if done, err := p.keepExcerpt(e, msg); done || err != nil {
			return err
		}
		if turn != nil {
			return turn.answer(e)
		}
		return p.grammar(e, msg)
	})
}

// keepExcerpt keeps a message that is not a command as an excerpt, in
// the message's transaction. It says done when the message is answered
// already: only punctuation, or external text shaped like a standing
// instruction, which is held.
func (p *Processor) keepExcerpt(e *Event, msg Message) (done bool, err error) {
	if strings.TrimFunc(msg.Body, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }) == "" {
		p.notUnderstood(e, true)
		return true, nil
	}
	held := !msg.Trust.AtLeast(core.TrustNative) && core.LooksLikeInstruction(msg.Body)
	var id int64
	if p.deps.Excerpts != nil {
		id, err = p.deps.Excerpts.AddExcerpt(e.Ctx, core.Excerpt{
			RoomID: msg.RoomID, Sender: msg.Sender, EventID: msg.EventID, Body: msg.Body,
			Trust: cmp.Or(msg.Trust, core.TrustNative), Held: held, At: msg.Sent,
		})
		if err != nil {
			return true, err
		}
	}
	if held {
		e.Reply("That reads like a standing instruction, and it came through a bridge, so I won't act on it or let it shape what I do. "+
			"If you mean it, confirm from your Matrix account with `%sratify %d`.", p.cfg.Prefix, id)
		return true, nil
	}
	return false, nil
}

// AddIntent adds a sentence recogniser; the first that matches wins.
func (p *Processor) AddIntent(intent Intent) { p.intents = append(p.intents, intent) }

// Prefix returns the command prefix.
func (p *Processor) Prefix() string { return p.cfg.Prefix }

// IsAdmin reports whether a user may run admin-only commands.
func (p *Processor) IsAdmin(userID string) bool { return p.admins[userID] }

// Handle acts on one message exactly once: the event is marked handled in
// the same transaction as the handler's changes and replies, so a message
// redelivered after a crash does nothing the second time.
func (p *Processor) Handle(ctx context.Context, msg Message) Outcome {
	msg = msg.withTrust()
	if !p.admit(ctx, msg) {
		return Refused
	}
	body := strings.TrimSpace(msg.Body)
	if rest, named := p.stripName(body); named {
		body, msg.Body, msg.Addressed = rest, rest, true
	}
	if !strings.HasPrefix(body, p.cfg.Prefix) {
		return p.converse(ctx, msg)
	}
	fields := strings.Fields(strings.TrimPrefix(body, p.cfg.Prefix))
	if len(fields) == 0 {
		return Ignored
	}
	metrics.MessagesHandled.Inc()
	if msg.Relay {
		return p.exec(ctx, msg, &Event{Message: msg, Proc: p, Command: "relayed"}, func(*Event) error {
			return refuse("I can't act on messages relayed for someone else. %s, message me from your own account (or link it with `%slink`).",
				cmp.Or(msg.RelayedName, "Whoever wrote this"), p.cfg.Prefix)
		})
	}
	return p.dispatch(ctx, msg, fields, strings.TrimSpace(strings.TrimPrefix(body, p.cfg.Prefix)))
}

// admit reports whether a message is within its sender's limit. The
// first one past it is answered once with how long Jarvis will not
// listen; the rest get nothing until the sender's bucket is full again.
func (p *Processor) admit(ctx context.Context, msg Message) bool {
	v, quiet := p.limiter.check(msg.Sender, p.deps.Clock.Now())
	switch v {
	case allow:
		return true
	case warn:
		zerolog.Ctx(ctx).Warn().Dur("quiet", quiet).Msg("Sender past the chat rate limit")
		metrics.MessagesLimited.Inc()
		p.exec(ctx, msg, &Event{Message: msg, Proc: p, Command: "limited"}, func(e *Event) error {
			e.Reply("You are sending faster than I can answer; I will ignore messages for %d s.", int(quiet.Seconds()))
			return nil
		})
	default:
		metrics.MessagesLimited.Inc()
	}
	return false
}

// dispatch resolves the handler and runs it.
func (p *Processor) dispatch(ctx context.Context, msg Message, fields []string, raw string) Outcome {
	h, path, args := p.resolve(fields)
	evt := &Event{Message: msg, Proc: p, Handler: h, Command: path, Args: args, RawArgs: rawAfter(raw, len(fields)-len(args))}
	return p.exec(ctx, msg, evt, p.run)
}

// exec runs fn in one transaction with the event's replies, marking the
// event handled in it. It is the one place a handler's error becomes an
// answer, as api.WriteError is for the HTTP API:
//
//   - nil: the command's changes and replies commit;
//   - a refusal (refuse): its text is the reply, in the same transaction,
//     and the message counts as refused;
//   - the store's fence (core.ErrStaleEpoch): nothing is written or
//     answered, and the event is delivered again;
//   - any other error, or a panic: the changes roll back and the sender is
//     told briefly that the command failed.
func (p *Processor) exec(ctx context.Context, msg Message, evt *Event, fn func(*Event) error) Outcome {
	return p.execClaimed(ctx, msg, evt, func(ctx context.Context) (bool, error) {
		return p.deps.Handled.MarkHandled(ctx, msg.EventID, p.deps.Clock.Now())
	}, fn)
}

// execClaimed is exec with the claim that makes the event's answer happen
// once: marking it handled, or taking its model turn. fn runs only when
// claim, in the transaction, says this run is the first.
func (p *Processor) execClaimed(ctx context.Context, msg Message, evt *Event, claim func(context.Context) (bool, error), fn func(*Event) error) Outcome {
	// Someone is waiting for the answer: go before the agents' reports.
	ctx = core.Urgent(ctx)
	defer p.deps.Chat.Begin()()
	log := zerolog.Ctx(ctx)
	path := evt.Command
	var first bool
	err := p.deps.Tx.InTx(ctx, func(ctx context.Context) (err error) {
		// The store may run this again after a serialization failure:
		// start each run with no replies sent.
		evt.Ctx, evt.replies, evt.err, evt.refused = ctx, 0, nil, false
		first, err = claim(ctx)
		if err != nil || !first {
			return err
		}
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic in %q: %v\n%s", path, r, debug.Stack())
			}
		}()
		err = fn(evt)
		var r *refusedError
		if errors.As(err, &r) {
			evt.refused = true
			evt.Reply("%s", r.reply)
			err = nil
		}
		if evt.err != nil {
			// A reply that could not be queued fails the command.
			return evt.err
		}
		return err
	})
	switch {
	case err == nil && (!first || evt.replies == 0):
		return Ignored
	case err == nil && evt.refused:
		return Refused
	case err == nil:
		return Answered
	}
	// The store's fence refused the transaction: nothing is written and
	// nothing is answered, since another Jarvis is in charge; the channel
	// delivers the event again, to whichever Jarvis holds the lease then.
	if errors.Is(err, core.ErrStaleEpoch) {
		log.Warn().Err(err).Str("command", path).Msg("Not handling: this Jarvis no longer holds the workspace lease")
		core.NotHandled(ctx, err)
		return Failed
	}
	log.Err(err).Str("command", path).Msg("Failed to handle command")
	// The handler's changes were rolled back; answer in a fresh transaction.
	evt.replies, evt.err = 0, nil
	err = p.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		evt.Ctx = ctx
		if first, err := claim(ctx); err != nil || !first {
			return err
		}
		evt.Reply("Sorry, `%s` failed on my side. It changed nothing; try again, or ask an admin to check `%ssys logs`.", path, p.cfg.Prefix)
		return evt.err
	})
	if err != nil {
		log.Err(err).Msg("Failed to answer a failed command")
		core.NotHandled(ctx, err)
	}
	return Failed
}

// run runs the handler of a command, refusing an unknown command and an
// admin verb from anyone else.
func (p *Processor) run(evt *Event) error {
	h := evt.Handler
	if err := p.mayRun(evt); err != nil {
		return err
	}
	switch {
	case h.Func == nil:
		evt.Reply("%s", p.helpFor(h, evt.Command))
		return nil
	default:
		metrics.Commands.WithLabelValues(evt.Command).Inc()
		return h.Func(evt)
	}
}

// mayRun is the table's own check of who may run a command: an unknown
// command, or an admin verb from anyone else, is refused (refuse). A
// model's proposal is checked with it too, when it is made.
func (p *Processor) mayRun(evt *Event) error {
	h := evt.Handler
	switch {
	case h == nil:
		return refuse("Unknown command `%s%s`, try `%shelp`.", p.cfg.Prefix, evt.Command, p.cfg.Prefix)
	case h.Admin && !evt.Admin() && p.IsAdmin(evt.Sender):
		return refuse("`%s%s` is for admins, and only from their Matrix account, not through a bridge.", p.cfg.Prefix, evt.Command)
	case h.Admin && !evt.Admin():
		return refuse("`%s%s` is for admins only.", p.cfg.Prefix, evt.Command)
	}
	return nil
}

// resolve walks the table: the top-level name, then sub-handlers as long
// as the next word names one. It returns the handler (nil if unknown), its
// full name and the remaining arguments.
func (p *Processor) resolve(fields []string) (*Handler, string, []string) {
	name := strings.ToLower(fields[0])
	h := p.byName[name]
	if h == nil {
		return nil, name, fields[1:]
	}
	path := h.Name
	args := fields[1:]
	for len(args) > 0 {
		sub := h.sub(strings.ToLower(args[0]))
		if sub == nil {
			break
		}
		h, path, args = sub, path+" "+sub.Name, args[1:]
	}
	return h, path, args
}
