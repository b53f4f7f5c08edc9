package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	leasepkg "github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	wakepkg "github.com/jarvis-hmi/jarvis/core/wake"
	"github.com/jarvis-hmi/jarvis/internal/logring"
	"github.com/jarvis-hmi/jarvis/sources"
	"github.com/jarvis-hmi/jarvis/store"
)

// runJarvis reads top to bottom: config, logger, store, the Matrix login,
// core services, commands, API, then run until a signal.
func runJarvis(ctx context.Context, configPath string) error {
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return fail(exitConfig, err)
	}
	logs := logring.New(1000)
	log := newLogger(cfg.Logging, logs)
	started := time.Now()
	log.Info().Str("version", version).Str("workspace", cfg.Workspace.WorkspaceID).Msg("Starting Jarvis")

	st, err := store.Open(ctx, cfg.Store, log)
	if err != nil {
		return fail(exitStore, err)
	}
	defer st.Close()
	clock := core.SystemClock{}
	outbox := st.Outbox()

	policy, err := bridge.NewPolicy(cfg.Bot.AllowedUsers, cfg.Bridges, st)
	if err != nil {
		return fail(exitConfig, err)
	}
	// The bot and the processor exist before the lease, whose notices go to
	// the room the bot finds; they reach it once Run starts.
	var lease *leasepkg.Lease
	leader := func() bool { _, held := lease.Holding(); return held }
	fenceHeld := func(ctx context.Context) error { return lease.FenceHeld(ctx) }
	proc := commands.NewProcessor(commands.Config{Prefix: cfg.Bot.CommandPrefix, Admins: cfg.Bot.Admins},
		commands.Deps{Tx: st, Outbox: outbox, Handled: st, Notices: outbox, Pending: st, Excerpts: st, Clock: clock, Fence: fenceHeld})
	b, err := bot.New(cfg.Homeserver.URL, cfg.Bot, bot.Deps{
		State:     st,
		Outbox:    outbox,
		Wake:      outbox.Wake,
		Processor: proc,
		Policy:    policy,
		Clock:     clock,
		Gate:      func(ctx context.Context) error { return lease.Check(ctx) },
		Leader:    leader,
		DB:        st.DB,
	}, log)
	if err != nil {
		return fail(exitConfig, err)
	}
	if err := b.Prepare(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fail(exitMatrix, fmt.Errorf("matrix: %w", err))
	}
	room := b.RoomID()
	lease = leasepkg.New(cfg.Workspace, leasepkg.Deps{Holder: holderName(), Store: st.Leases(), Tx: st, Outbox: outbox, Clock: clock, Room: room,
		OnError: func(err error) { log.Err(err).Msg("Failed to keep the workspace lease") }})

	var tripwires *tripwire.Service
	var wake func()
	breakers := breaker.NewService(cfg.Breaker, breaker.Deps{Store: st.Breakers(), Tx: st, Outbox: outbox, Clock: clock,
		Room: room, Admins: cfg.Bot.Admins, Fence: lease.FenceHeld,
		OnChange: func(string) { go reevaluate(ctx, log, tripwires, "breaker.state") }})
	cards := card.NewService(cfg.Cards, card.Deps{Store: st.Cards(), Tx: st, Outbox: outbox, Clock: clock,
		Room: room, Admins: cfg.Bot.Admins, Fence: lease.FenceHeld,
		OnChange: func(context.Context) {
			go reevaluate(ctx, log, tripwires, card.SourceKinds...)
			go wake()
		}})

	fl, err := fleet.NewService(cfg.Fleet, fleet.Deps{Tx: st, Heartbeats: st.Heartbeats(),
		Journal: st.AgentJournal(), Attestations: st.Attestations(), Outbox: outbox, Clock: clock, Room: room,
		OnChange: func() {
			go reevaluate(ctx, log, tripwires, fleet.SourceKinds...)
			go wake()
		}})
	if err != nil {
		return fail(exitConfig, err)
	}
	fl.AddSnapshotSection("breakers", func(ctx context.Context) (any, error) { return breakerSummary(ctx, breakers) })
	fl.AddSnapshotSection("cards", func(ctx context.Context) (any, error) { return cardCounts(ctx, cards) })

	registry := core.NewSourceRegistry()
	registry.Register(core.SourceKind{Kind: "breaker.state", Aliases: []string{"breaker", "circuit breaker", "breaker state"},
		Description: "an agent's circuit breaker (closed, open, half-open)", Param: "agent name",
		Resolve: func(ctx context.Context, agent string) (core.Observation, error) {
			state, err := breakers.ResolveState(ctx, agent)
			return core.Observation{Value: state}, err
		}})
	if err := sources.Register(registry, cfg.Sources); err != nil {
		return fail(exitConfig, err)
	}
	tripwires = tripwire.NewService(cfg.Tripwires, tripwire.Deps{Store: st.Tripwires(), Tokens: st.TripwireTokens(),
		Tx: st, Outbox: outbox, Sources: registry, Clock: clock, Room: room})
	fl.RegisterSources(registry)
	cards.RegisterSources(registry)
	router := wakepkg.NewRouter(wakepkg.Deps{Store: st, Tx: st, Outbox: outbox, Clock: clock, Room: room,
		Sources: []wakepkg.Source{
			{Name: "cards", List: cards.WakeConditions},
			{Name: "ci", List: func(ctx context.Context) ([]core.WakeCondition, error) {
				return wakepkg.CIFailureConditions(ctx, fl, cards)
			}},
		}})
	wake = func() {
		if leader() {
			if _, err := router.Reconcile(ctx); err != nil && ctx.Err() == nil {
				log.Err(err).Msg("Wake router failed to reconcile")
			}
		}
	}
	restart := make(chan struct{}, 1)
	sys := &commands.System{Version: version, Started: started, Logs: logs.Last, State: st,
		Restart: func() {
			select {
			case restart <- struct{}{}:
			default:
			}
		}}
	var lastTick atomic.Pointer[tickSummary]
	sys.Sections = append(statusSections(cfg, b, lease, outbox), commands.StatusSection{
		Title: "Fleet", Verb: "fleet", Help: "What every agent is doing, from heartbeats.",
		Lines: func(ctx context.Context) ([]string, error) {
			rows, err := fl.FleetStatus(ctx)
			return strings.Split(fleet.Render(rows), "\n"), err
		}}, commands.StatusSection{
		Title: "Tripwires, breakers, cards",
		Lines: func(ctx context.Context) ([]string, error) {
			return domainStatus(ctx, st, breakers, cards, lastTick.Load())
		}})
	proc.RegisterSys(sys)
	commands.RegisterCards(proc, cards)
	// Drafts belong to people: clearing a room drops its members' drafts.
	sys.Clearers = append(sys.Clearers, commands.DraftsClearer(cards, func(ctx context.Context, roomID string) ([]string, error) {
		resp, err := b.Client.JoinedMembers(ctx, id.RoomID(roomID))
		if err != nil {
			return nil, err
		}
		members := make([]string, 0, len(resp.Joined))
		for user := range resp.Joined {
			members = append(members, user.String())
		}
		return members, nil
	}))
	commands.RegisterBreaker(proc, breakers)
	proc.RegisterLink(st)
	proc.RegisterFleet(fl)
	commands.RegisterTripwires(proc, tripwires, func() []string {
		agents := fl.Agents()
		names := make([]string, len(agents))
		for i, a := range agents {
			names[i] = a.Name
		}
		return names
	}, cfg.Chat.ProposalTTL)
	sys.Clearers = append(sys.Clearers, func(ctx context.Context, roomID string) (string, error) {
		n, err := st.ClearExcerpts(ctx, roomID)
		if err != nil || n == 0 {
			return "", err
		}
		return fmt.Sprintf("%d remembered messages", n), nil
	})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	var srv *api.Server
	if cfg.API.Listen != "" {
		srv = api.New(cfg.API, log, func(ctx context.Context) (api.Health, error) {
			depth, err := outbox.Depth(ctx)
			if err != nil {
				return api.Health{}, fmt.Errorf("outbox: %w", err)
			}
			h := b.Health()
			return api.Health{DeviceID: h.DeviceID, Encryption: h.Encryption, LastSync: h.LastSync, Leader: leader(),
				OutboxDepth: depth, RoomID: h.RoomID, SyncError: h.SyncError, Synced: !h.LastSync.IsZero(), UserID: h.UserID}, nil
		})
		api.RegisterBreaker(srv, breakers)
		api.RegisterFleet(srv, fl)
		api.RegisterTripwires(srv, tripwires)
		api.RegisterCards(srv, cards)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Run(ctx); err != nil {
				errc <- fail(exitAPI, fmt.Errorf("api: %w", err))
				cancel()
			}
		}()
	}
	wg.Add(3)
	go func() {
		defer wg.Done()
		_ = lease.Run(ctx, func(held bool, epoch int64) {
			leaseChanged(ctx, log, st, outbox, lease, room, held, epoch)
			if held {
				go wake()
			}
		})
	}()
	go func() {
		defer wg.Done()
		every(ctx, 5*time.Second, func() {
			if leader() {
				if _, err := breakers.Sweep(ctx); err != nil {
					log.Err(err).Msg("Failed to sweep breakers")
				}
			}
		})
	}()
	go func() {
		defer wg.Done()
		if err := b.Run(ctx); err != nil && ctx.Err() == nil {
			errc <- fail(exitMatrix, fmt.Errorf("matrix: %w", err))
			cancel()
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		every(ctx, 30*time.Second, func() {
			if leader() {
				if _, err := cards.Sweep(ctx); err != nil {
					log.Err(err).Msg("Failed to sweep card questions")
				}
			}
		})
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		var started time.Time
		tripwires.Run(ctx, func(r tripwire.TickReport, err error) {
			now := time.Now()
			if !started.IsZero() {
				lastTick.Store(&tickSummary{At: now, Report: r, Err: err})
			}
			started = now
			if err != nil {
				log.Err(err).Msg("Tripwire evaluator pass failed")
				return
			}
			log.Debug().Interface("report", r).Msg("Tripwire evaluator pass")
		})
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		every(ctx, sweepInterval(cfg.Fleet), func() {
			if leader() {
				if err := fl.Sweep(ctx); err != nil {
					log.Err(err).Msg("Failed to sweep the fleet")
				}
			}
		})
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		every(ctx, 30*time.Second, wake)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		reloadOnHangup(ctx, log, configPath, func(next *Config) {
			if srv != nil {
				srv.SetAgentToken(next.API.AgentToken)
			}
			if err := fl.SetConfig(next.Fleet); err != nil {
				log.Err(err).Msg("Failed to reload the fleet's agents")
			}
		})
	}()
	var restarting atomic.Bool
	go func() {
		select {
		case <-restart:
			log.Info().Msg("Restart asked: draining the outbox")
			drainOutbox(ctx, outbox, 15*time.Second)
			restarting.Store(true)
			cancel()
		case <-ctx.Done():
		}
	}()
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	if restarting.Load() {
		st.Close()
		log.Info().Msg("Restarting")
		return reexec()
	}
	log.Info().Msg("Jarvis stopped")
	return nil
}

// leaseChanged reacts to this Jarvis gaining or losing the workspace
// lease. Gaining it, it says it is back if a restart was asked. Refused
// at start, it leaves one notice in the outbox (the holder's sender
// delivers it) and stays mute.
func leaseChanged(ctx context.Context, log zerolog.Logger, st *store.Store, outbox *store.Outbox, lease *leasepkg.Lease, room string, held bool, epoch int64) {
	if held {
		log.Info().Int64("epoch", epoch).Msg("Holding the workspace lease")
		if err := announceBack(ctx, st, outbox); err != nil {
			log.Err(err).Msg("Failed to announce the restart")
		}
		return
	}
	if ctx.Err() != nil {
		return
	}
	current, err := lease.Current(ctx)
	if err != nil {
		log.Err(err).Msg("Failed to read the workspace lease")
		return
	}
	log.Warn().Str("holder", current.Holder).Int64("epoch", current.Epoch).Msg("Another Jarvis holds the workspace lease; staying mute")
	err = outbox.Enqueue(ctx, core.Notice{
		Key:    "lease:mute:" + lease.Holder(),
		RoomID: room,
		Kind:   core.NoticeMessage,
		Body: fmt.Sprintf("Another Jarvis (`%s`) holds this workspace since %s, epoch %d; this one (`%s`) stays mute and takes over only if that lease lapses.",
			current.Holder, current.AcquiredAt.UTC().Format(time.RFC3339), current.Epoch, lease.Holder()),
	})
	if err != nil && !errors.Is(err, core.ErrDuplicate) {
		log.Err(err).Msg("Failed to queue the mute notice")
	}
}

// reevaluate runs the tripwires reading the given source kinds at once,
// after a state change of Jarvis's own, instead of waiting for the tick.
func reevaluate(ctx context.Context, log zerolog.Logger, tw *tripwire.Service, kinds ...string) {
	if _, err := tw.Reevaluate(ctx, kinds...); err != nil && ctx.Err() == nil {
		log.Err(err).Strs("kinds", kinds).Msg("Failed to re-evaluate tripwires")
	}
}

// reloadOnHangup re-reads the configuration on SIGHUP and applies what
// can change without a restart: the agents' token and the fleet's agents.
// A file that does not load is logged and changes nothing.
func reloadOnHangup(ctx context.Context, log zerolog.Logger, configPath string, apply func(*Config)) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			next, err := LoadConfig(configPath)
			if err != nil {
				log.Err(err).Msg("Not reloading: the configuration does not load")
				continue
			}
			apply(next)
			log.Info().Msg("Reloaded the agent token and the fleet's agents")
		}
	}
}

// tickSummary is the evaluator's last pass, for `!sys status`.
type tickSummary struct {
	At     time.Time
	Report tripwire.TickReport
	Err    error
}

// domainStatus is the `!sys status` part about what Jarvis keeps for
// people: tripwires by status and the evaluator's last pass, open
// breakers, cards by state and the decisions waiting.
func domainStatus(ctx context.Context, st *store.Store, breakers *breaker.Service, cards *card.Service, tick *tickSummary) ([]string, error) {
	counts, err := st.TripwireStatusCounts(ctx)
	if err != nil {
		return nil, err
	}
	lines := []string{fmt.Sprintf("tripwires: %d armed, %d tripped, %d quarantined, %d disabled",
		counts["armed"], counts["tripped"], counts["quarantined"], counts["disabled"])}
	if tick != nil {
		line := fmt.Sprintf("evaluator: last pass %s, %d tripwires, %d sources, %d fired, %d reset",
			tick.At.UTC().Format(time.RFC3339), tick.Report.Evaluated, tick.Report.Sources, tick.Report.Fired, tick.Report.Reset)
		if tick.Err != nil {
			line += ", failed: " + tick.Err.Error()
		}
		lines = append(lines, line)
	}
	all, err := breakers.StatusAll(ctx)
	if err != nil {
		return nil, err
	}
	var open []string
	for _, b := range all {
		if b.State != breaker.Closed {
			open = append(open, fmt.Sprintf("%s (%s)", b.Agent, b.State))
		}
	}
	if len(open) == 0 {
		lines = append(lines, "breakers: all closed")
	} else {
		lines = append(lines, "breakers not closed: "+strings.Join(open, ", "))
	}
	byState, err := cardCounts(ctx, cards)
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, state := range card.States {
		if n := byState[string(state)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
		}
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return append(lines, "cards: "+strings.Join(parts, ", ")+fmt.Sprintf("; decisions waiting: %d", byState[string(card.NeedsDecision)])), nil
}

// sweepInterval checks heartbeats often enough for the fastest agent: a
// quarter of its cadence, between a second and a minute.
func sweepInterval(cfg fleet.Config) time.Duration {
	interval := time.Minute
	for _, a := range cfg.Agents {
		interval = min(interval, max(a.Cadence/4, time.Second))
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

// statusSections are the parts of `!sys status` the wiring knows about.
func statusSections(cfg *Config, b *bot.Bot, lease *leasepkg.Lease, outbox *store.Outbox) []commands.StatusSection {
	return []commands.StatusSection{
		{Title: "Matrix", Lines: func(context.Context) ([]string, error) {
			h := b.Health()
			lines := []string{fmt.Sprintf("homeserver %s as %s in %s", cfg.Homeserver.URL, h.UserID, h.RoomID)}
			if h.Encryption {
				lines = append(lines, fmt.Sprintf("device %s, end-to-end encryption on", h.DeviceID))
			} else {
				lines = append(lines, fmt.Sprintf("device %s, end-to-end encryption off", h.DeviceID))
			}
			if !h.LastSync.IsZero() {
				lines = append(lines, fmt.Sprintf("last sync %s", h.LastSync.Format(time.RFC3339Nano)))
			}
			if h.SyncError != "" {
				lines = append(lines, fmt.Sprintf("sync failing: %s", h.SyncError))
			}
			return lines, nil
		}},
		{Title: "Lease", Verb: "lease", Help: "Who holds the workspace lease, under which epoch, until when.", Lines: func(ctx context.Context) ([]string, error) {
			rec, err := lease.Current(ctx)
			if err != nil {
				return nil, err
			}
			_, held := lease.Holding()
			return []string{fmt.Sprintf("workspace %s, epoch %d, held by %s (this one: %v) since %s, until %s",
				rec.WorkspaceID, rec.Epoch, rec.Holder, held, rec.AcquiredAt.UTC().Format(time.RFC3339), rec.ExpiresAt.UTC().Format(time.RFC3339))}, nil
		}},
		{Title: "Outbox", Lines: func(ctx context.Context) ([]string, error) {
			depth, err := outbox.Depth(ctx)
			if err != nil {
				return nil, err
			}
			lastErr, err := outbox.LastError(ctx)
			if err != nil {
				return nil, err
			}
			if lastErr == "" {
				lastErr = "none"
			}
			return []string{fmt.Sprintf("%d waiting, last send error: %s", depth, lastErr)}, nil
		}},
		{Title: "Database", Lines: func(context.Context) ([]string, error) {
			info, err := os.Stat(cfg.Store.URI)
			if err != nil {
				return nil, err
			}
			return []string{fmt.Sprintf("%s, %.1f MiB", cfg.Store.URI, float64(info.Size())/(1<<20))}, nil
		}},
	}
}

// drainOutbox waits until every queued notice is sent, or the timeout.
func drainOutbox(ctx context.Context, outbox *store.Outbox, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if depth, err := outbox.Depth(ctx); err != nil || depth == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reexec replaces this process with a fresh start of the same binary and
// arguments. Under systemd the PID stays, so Restart=always is not needed
// for it.
func reexec() error {
	self, err := os.Executable()
	if err != nil {
		return fail(exitFailure, fmt.Errorf("restart: %w", err))
	}
	return fail(exitFailure, fmt.Errorf("restart: %w", syscall.Exec(self, os.Args, os.Environ())))
}

// announceBack says "back" in the room where a restart was asked, once.
func announceBack(ctx context.Context, st *store.Store, outbox *store.Outbox) error {
	return st.InTx(ctx, func(ctx context.Context) error {
		room, err := st.State(ctx, commands.StateRestartRoom)
		if err != nil || room == "" {
			return err
		}
		err = outbox.Enqueue(ctx, core.Notice{
			Key: "back:" + strconv.FormatInt(time.Now().UnixNano(), 36), RoomID: room, Kind: core.NoticeMessage,
			Body: fmt.Sprintf("Back: Jarvis %s is running again.", version),
		})
		if err != nil {
			return err
		}
		return st.SetState(ctx, commands.StateRestartRoom, "")
	})
}

// newLogger logs pretty on a terminal and JSON otherwise, unless the
// config says which, and keeps the last lines in ring for `!sys logs`.
func newLogger(cfg LoggingConfig, ring *logring.Ring) zerolog.Logger {
	level, _ := zerolog.ParseLevel(cfg.Level)
	pretty := cfg.Format == "pretty" || (cfg.Format == "auto" && isatty.IsTerminal(os.Stderr.Fd()))
	var out io.Writer = os.Stderr
	if pretty {
		out = zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(zerolog.MultiLevelWriter(out, ring)).Level(level).With().Timestamp().Logger()
}
