package console

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
)

// PollInterval is how often the lease holder looks for lines typed in a
// console, and a console for what Jarvis said.
const PollInterval = 200 * time.Millisecond

// inputBatch is how many waiting inputs one round takes.
const inputBatch = 50

// deliverInterval is how often the relay marks the console's notices
// delivered when it acted on nothing: the notices that came from
// elsewhere (a console user's trip pushes) are read from the outbox
// whether marked or not; marking them keeps the outbox's depth honest and
// lets retention have them.
const deliverInterval = 10 * time.Second

// keepHandled is how long an input stays after it was handled, for its
// console to read the outcome; a console that went away meanwhile leaves
// it to be pruned.
const keepHandled = time.Hour

// Inputs keeps what people type in consoles.
type Inputs interface {
	WaitingInputs(ctx context.Context, limit int) ([]core.Input, error)
	MarkInputHandled(ctx context.Context, seq int64, outcome string, at time.Time) error
	PruneInputs(ctx context.Context, before time.Time) error
}

// Delivery marks the console's notices in the outbox delivered.
type Delivery interface {
	DeliverConsole(ctx context.Context, at time.Time) (int, error)
}

// Processor is the command processor, as the relay uses it.
type Processor interface {
	Handle(ctx context.Context, msg commands.Message) commands.Outcome
	HandleAnswerTo(ctx context.Context, msg commands.Message, key string) commands.Outcome
}

// RelayDeps are what the relay works with.
type RelayDeps struct {
	Inputs    Inputs
	Outbox    Delivery
	Processor Processor
	Clock     core.Clock
}

// Relay acts on what people type in consoles. It runs in the Jarvis that
// holds the workspace lease, beside its other writing loops, so that a
// console alongside a running Jarvis changes nothing itself; every write
// it makes is fenced by the lease.
type Relay struct {
	deps RelayDeps
	kick chan struct{}
}

// NewRelay returns the relay.
func NewRelay(deps RelayDeps) *Relay {
	return &Relay{deps: deps, kick: make(chan struct{}, 1)}
}

// Kick asks for a round now, for a console in the holder's own process.
func (r *Relay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run acts on inputs every PollInterval, and when kicked, until ctx ends.
func (r *Relay) Run(ctx context.Context) {
	ticker := time.NewTicker(PollInterval)
	defer ticker.Stop()
	deliver := time.NewTicker(deliverInterval)
	defer deliver.Stop()
	prune := time.NewTicker(keepHandled / 4)
	defer prune.Stop()
	log := zerolog.Ctx(ctx)
	for {
		if err := r.Round(ctx); err != nil && ctx.Err() == nil {
			log.Err(err).Msg("Failed to act on console input")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-r.kick:
		case <-deliver.C:
			if _, err := r.deps.Outbox.DeliverConsole(ctx, r.deps.Clock.Now()); err != nil && ctx.Err() == nil {
				log.Err(err).Msg("Failed to mark console notices delivered")
			}
		case <-prune.C:
			if err := r.deps.Inputs.PruneInputs(ctx, r.deps.Clock.Now().Add(-keepHandled)); err != nil && ctx.Err() == nil {
				log.Err(err).Msg("Failed to prune console input")
			}
		}
	}
}

// Round acts on the waiting inputs, oldest first, each exactly once, and
// then marks the console's notices delivered. It stops at the first input
// that could not be acted on for a reason that may pass (this Jarvis lost
// the lease), leaving it and those after it waiting.
func (r *Relay) Round(ctx context.Context) error {
	inputs, err := r.deps.Inputs.WaitingInputs(ctx, inputBatch)
	if err != nil || len(inputs) == 0 {
		return err
	}
	for _, in := range inputs {
		tracked, reason := core.TrackNotHandled(ctx)
		msg := Message(in)
		var outcome commands.Outcome
		if in.Answers != "" {
			outcome = r.deps.Processor.HandleAnswerTo(tracked, msg, in.Answers)
		} else {
			outcome = r.deps.Processor.Handle(tracked, msg)
		}
		if err := reason(); err != nil {
			return err
		}
		if err := r.deps.Inputs.MarkInputHandled(ctx, in.Seq, string(outcome), r.deps.Clock.Now()); err != nil {
			return err
		}
	}
	_, err = r.deps.Outbox.DeliverConsole(ctx, r.deps.Clock.Now())
	return err
}
