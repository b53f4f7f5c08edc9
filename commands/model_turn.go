package commands

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
)

// errCutOff is why a resumed turn was answered by the grammar: the model's
// answer was cut off by a restart longer ago than the resume bound.
var errCutOff = errors.New("the model's turn was cut off by a restart")

// startTurn hands a message to the model durably: its transaction marks
// the message handled, keeps it as an excerpt and records the turn; the
// turn then runs off the channel's loop, and the transaction that queues
// its answer takes the record. A message handled before (read again after
// a reconnect) starts no turn and costs no model call.
func (p *Processor) startTurn(ctx context.Context, msg Message) Outcome {
	payload, err := json.Marshal(msg)
	if err != nil {
		zerolog.Ctx(ctx).Err(err).Msg("Failed to record a model turn; the grammar answers")
		return p.answerConversation(ctx, msg, nil)
	}
	queued := false
	out := p.exec(ctx, msg, &Event{Message: msg, Proc: p, Command: "converse"}, func(e *Event) error {
		queued = false
		if done, err := p.keepExcerpt(e, msg); done || err != nil {
			return err
		}
		queued = true
		return p.deps.Turns.AddModelTurn(e.Ctx, core.ModelTurn{EventID: msg.EventID, RoomID: msg.RoomID, Sender: msg.Sender,
			Message: string(payload), Started: p.deps.Clock.Now()})
	})
	if !queued || out == Failed {
		return out
	}
	p.background(func() { p.finishTurn(ctx, msg, false) })
	return Answered
}

// finishTurn runs a recorded turn, one at a time per person, and answers
// it in the transaction that takes its record: exactly one answer even
// when two runs called the model (a resumed turn and one still in
// flight). A turn whose context ended (a restart, the lease lost) stays
// recorded for the next lease holder. cutOff answers with the grammar and
// says the model's answer was cut off, without calling the model.
func (p *Processor) finishTurn(ctx context.Context, msg Message, cutOff bool) {
	v, _ := p.turnLocks.LoadOrStore(msg.Sender, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	defer mu.Unlock()
	turn := &modelTurn{p: p, msg: msg, err: errCutOff}
	if !cutOff {
		turn = p.runModel(ctx, msg)
	}
	if ctx.Err() != nil {
		return
	}
	p.execClaimed(ctx, msg, &Event{Message: msg, Proc: p, Command: "converse"}, func(ctx context.Context) (bool, error) {
		return p.deps.Turns.TakeModelTurn(ctx, msg.EventID)
	}, turn.answer)
}

// ResumeTurns answers the model turns a crash or a restart cut short: the
// lease holder calls it when it gains the lease. A turn started within
// bound is run again; an older one (or any, when no model is configured
// now) is answered by the grammar, with a line saying the model's answer
// was cut off by a restart, rather than calling the model late.
func (p *Processor) ResumeTurns(ctx context.Context, bound time.Duration) error {
	if p.deps.Turns == nil || p.background == nil {
		return nil
	}
	turns, err := p.deps.Turns.ModelTurns(ctx)
	if err != nil {
		return err
	}
	now := p.deps.Clock.Now()
	for _, t := range turns {
		var msg Message
		if err := json.Unmarshal([]byte(t.Message), &msg); err != nil || msg.EventID != t.EventID {
			// Answered still: by the grammar, as a message it cannot read.
			zerolog.Ctx(ctx).Warn().Err(err).Str("event", t.EventID).Msg("A model turn's message could not be read again")
			msg = Message{EventID: t.EventID, RoomID: t.RoomID, Sender: t.Sender, Addressed: true}
		}
		cutOff := p.features.model == nil || now.Sub(t.Started) > bound || msg.Body == ""
		zerolog.Ctx(ctx).Info().Str("event", t.EventID).Bool("cut_off", cutOff).Msg("Resuming a model turn a restart cut short")
		p.background(func() { p.finishTurn(ctx, msg, cutOff) })
	}
	return nil
}
