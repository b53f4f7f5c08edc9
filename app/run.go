package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/logring"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
	"github.com/jarvis-hmi/jarvis/store"
)

// leaseChanged reacts to this Jarvis gaining or losing the workspace
// lease. Gaining it, it says it is back if a restart was asked. Refused
// at start, or having lost the lease it held (epoch), it leaves one notice
// in the outbox (the holder's sender delivers it) and stays mute.
func (a *App) leaseChanged(ctx context.Context, held bool, epoch int64) {
	metrics.LeaseEpoch.Set(float64(epoch))
	heldGauge := 0.0
	if held {
		heldGauge = 1
	}
	metrics.LeaseHeld.Set(heldGauge)
	if held {
		a.log.Info().Int64("epoch", epoch).Msg("Holding the workspace lease")
		if err := a.announceBack(ctx); err != nil {
			a.log.Err(err).Msg("Failed to announce the restart")
		}
		if err := a.announceCrashLoop(ctx); err != nil {
			a.log.Err(err).Msg("Failed to announce the crash loop")
		}
		return
	}
	// A Jarvis that lost the lease because it could not reach the database
	// cannot say so until it can: until then there is nothing else the
	// lease's loop could do either, so it waits here.
	for ctx.Err() == nil {
		err := a.queueMute(ctx, epoch)
		if err == nil || errors.Is(err, core.ErrDuplicate) {
			return
		}
		a.log.Err(err).Msg("Failed to queue the mute notice")
		select {
		case <-ctx.Done():
		case <-time.After(a.cfg.Workspace.LeaseTTL / 3):
		}
	}
}

// queueMute queues the one notice a Jarvis that does not hold the lease
// writes: that another holds it and this one stays mute, and, if this one
// held it under epoch, that it lost it. A lease that lapsed with nobody
// taking it over needs none: the next round takes it back and says so.
func (a *App) queueMute(ctx context.Context, epoch int64) error {
	current, err := a.lease.Current(ctx)
	if err != nil {
		return err
	}
	me := a.lease.Holder()
	if current.Holder == me {
		return nil
	}
	a.log.Warn().Str("holder", current.Holder).Int64("epoch", current.Epoch).Msg("Another Jarvis holds the workspace lease; staying mute")
	notice := core.Notice{
		Key:    "lease:mute:" + me,
		RoomID: a.room,
		Kind:   core.NoticeMessage,
		Body: fmt.Sprintf("Another Jarvis (`%s`) holds this workspace since %s, epoch %d; this one (`%s`) stays mute and takes over only if that lease lapses.",
			current.Holder, current.AcquiredAt.UTC().Format(time.RFC3339), current.Epoch, me),
	}
	if epoch > 0 {
		notice.Key = fmt.Sprintf("lease:lost:%s:%d", me, epoch)
		notice.Body = fmt.Sprintf("Jarvis `%s` lost the workspace lease (epoch %d): it did not renew it in time, and `%s` took over at %s (epoch %d). "+
			"`%s` sent nothing since, stays mute and takes over only if that lease lapses.",
			me, epoch, current.Holder, current.AcquiredAt.UTC().Format(time.RFC3339), current.Epoch, me)
	}
	// The one write a standby makes: the holder's sender delivers it.
	return a.outbox.Enqueue(core.Unfenced(ctx), notice)
}

// reloadOnHangup re-reads the configuration on SIGHUP and applies what
// can change without a restart: the agents' token and the fleet's agents.
// A file that does not load is logged and changes nothing.
func reloadOnHangup(ctx context.Context, log zerolog.Logger, configPath string, apply func(*config.Config)) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			next, err := config.Load(configPath)
			if err != nil {
				log.Err(err).Msg("Not reloading: the configuration does not load")
				continue
			}
			apply(next)
			log.Info().Msg("Reloaded the agent token and the fleet's agents")
		}
	}
}

// Bounds of how often the fleet's heartbeats are checked.
const (
	minFleetSweep = time.Second
	maxFleetSweep = time.Minute
)

// fleetSweepInterval checks heartbeats often enough for the fastest agent:
// a quarter of its cadence, between minFleetSweep and maxFleetSweep.
func fleetSweepInterval(cfg fleet.Config) time.Duration {
	interval := maxFleetSweep
	for _, a := range cfg.Agents {
		interval = min(interval, max(a.Cadence/4, minFleetSweep))
	}
	return interval
}

// breakerSummary is the breakers' part of the terminal snapshot.
func breakerSummary(ctx context.Context, breakers *breaker.Service) (any, error) {
	all, err := breakers.StatusAll(ctx)
	if err != nil {
		return nil, err
	}
	states := map[string]string{}
	for _, st := range all {
		states[st.Agent] = string(st.State)
	}
	return states, nil
}

// cardCounts says how many cards are in each state, for the terminal
// snapshot and `!sys status`.
func cardCounts(ctx context.Context, cards *card.Service) (map[string]int, error) {
	list, err := cards.List(ctx, card.Filter{Limit: card.MaxListLimit})
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, c := range list {
		counts[string(c.State)]++
	}
	return counts, nil
}

// holderName names this process for the workspace lease: host, PID and a
// random suffix, so a restarted Jarvis never mistakes an old lease for its
// own.
func holderName() string {
	host, _ := os.Hostname()
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), suffix)
}

// every runs fn every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			fn()
		}
	}
}

// drainOutbox waits until every queued notice is sent, or the timeout.
func drainOutbox(ctx context.Context, outbox *store.Outbox, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if depth, err := outbox.Depth(ctx); err != nil || depth == 0 {
			return
		}
		time.Sleep(drainPollInterval)
	}
}

// Reexec replaces this process with a fresh start of the same binary and
// arguments, for `!sys restart` (Run returned ErrRestart). Under systemd
// the PID stays, so Restart=always is not needed for it. It returns only
// when it fails.
func Reexec() error {
	self, err := os.Executable()
	if err != nil {
		return fail(ErrFailed, fmt.Errorf("restart: %w", err))
	}
	return fail(ErrFailed, fmt.Errorf("restart: %w", syscall.Exec(self, os.Args, os.Environ())))
}

// announceBack says "back" in the room where a restart was asked, once.
func (a *App) announceBack(ctx context.Context) error {
	return a.store.InTx(ctx, func(ctx context.Context) error {
		room, err := a.store.State(ctx, commands.StateRestartRoom)
		if err != nil || room == "" {
			return err
		}
		err = a.outbox.Enqueue(ctx, core.Notice{
			Key: "back:" + strconv.FormatInt(time.Now().UnixNano(), 36), RoomID: room, Kind: core.NoticeMessage,
			Body: fmt.Sprintf("Back: Jarvis %s is running again.", a.version),
		})
		if err != nil {
			return err
		}
		return a.store.SetState(ctx, commands.StateRestartRoom, "")
	})
}

// Log lines carry their time to the millisecond, as the mautrix bridges'
// do: a sync, its handling and the send it led to often share a second.
func init() { zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00" }

// newLogger logs pretty on a terminal and JSON otherwise, unless the
// config says which, and keeps the last lines in ring for `!sys logs`.
func newLogger(cfg config.LoggingConfig, ring *logring.Ring, to io.Writer) zerolog.Logger {
	level, _ := zerolog.ParseLevel(cfg.Level)
	if to == nil {
		to = os.Stderr
	}
	tty := false
	if f, ok := to.(*os.File); ok {
		tty = isatty.IsTerminal(f.Fd())
	}
	pretty := cfg.Format == "pretty" || (cfg.Format == "auto" && tty)
	out := to
	if pretty {
		out = zerolog.ConsoleWriter{Out: to, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(zerolog.MultiLevelWriter(out, ring)).Level(level).With().Timestamp().Logger()
}
