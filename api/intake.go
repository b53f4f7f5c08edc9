package api

import (
	"context"
	"net/http"
	"runtime"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// IntakeConfig bounds agents' intake: the writes of agents, orchestrators
// and receivers (heartbeats, pings, journal entries, attestations, card
// sets, approvals, Alertmanager's notifications).
type IntakeConfig struct {
	// PerCPU is how many intake requests are handled at once for each CPU
	// the Go scheduler runs on (GOMAXPROCS); the rest wait their turn
	// without taking CPU. Fewer leave more of the CPU to chat (and to the
	// homeserver beside Jarvis) but make smaller heartbeat batches: with 8
	// per CPU, 64 agents flat out were taken 10 to 30 % slower than
	// without a cap. 0 is defaultIntakePerCPU.
	PerCPU int
	// ChatPause is how long an intake request waits before it starts
	// while a person waits for Jarvis's answer (see core.ChatFirst); 0
	// does not wait.
	ChatPause time.Duration
}

// validate checks the intake config.
func (c IntakeConfig) validate() error {
	switch {
	case c.PerCPU < 0:
		return core.Invalid("api.intake.per_cpu", "must not be negative (0 keeps %d), got %d", defaultIntakePerCPU, c.PerCPU)
	case c.ChatPause < 0 || c.ChatPause > 5*time.Second:
		return core.Invalid("api.intake.chat_pause", "must be between 0 and 5s, got %s", c.ChatPause)
	}
	return nil
}

// intake admits intake requests: chat first, then at most a number per
// CPU at once.
type intake struct {
	slots chan struct{}
	pause time.Duration
	chat  *core.ChatFirst
}

// defaultIntakePerCPU is api.intake.per_cpu when it is 0.
const defaultIntakePerCPU = 8

func newIntake(cfg IntakeConfig) *intake {
	perCPU := cfg.PerCPU
	if perCPU <= 0 {
		perCPU = defaultIntakePerCPU
	}
	return &intake{slots: make(chan struct{}, perCPU*runtime.GOMAXPROCS(0)), pause: cfg.ChatPause}
}

// enter waits for the request's turn; release ends it.
func (in *intake) enter(ctx context.Context) (release func(), err error) {
	if err := in.chat.Yield(ctx, in.pause); err != nil {
		return nil, err
	}
	select {
	case in.slots <- struct{}{}:
		return func() { <-in.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// YieldTo makes agents' intake wait, for at most api.intake.chat_pause,
// while chat says a person waits for an answer. Call it before Run.
func (s *Server) YieldTo(chat *core.ChatFirst) { s.intake.chat = chat }

// admitted reports whether a request of role p waits for admission: a
// write by an agent, an orchestrator or Alertmanager's receiver, whatever
// its route. It is not IntakeRoutes, the routes a standby serves: a
// supervisor's breach is one of those, and a halt never waits here.
func admitted(r *http.Request, role credential.Role) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	switch role {
	case credential.Agent, credential.Orchestrator, credential.Receiver:
		return true
	}
	return false
}
