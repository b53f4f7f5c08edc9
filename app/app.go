// Package app is one Jarvis: the application object that wires the store,
// the Matrix bot, the core services, the commands and the HTTP API
// together from the configuration, and runs their loops (New, Run, Close);
// the console's Jarvis, which needs no homeserver; and what the operator's
// subcommands do on a workspace's database. Its errors carry the kind of
// failure cmd/jarvis turns into an exit code (see Kind).
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"golang.org/x/sync/errgroup"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/chart"
	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/console"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/alertmanager"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/away"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/converse"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/quiet"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/core/retention"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/core/wake"
	"github.com/jarvis-hmi/jarvis/internal/logring"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
	"github.com/jarvis-hmi/jarvis/model"
	"github.com/jarvis-hmi/jarvis/schedule"
	"github.com/jarvis-hmi/jarvis/sources"
	"github.com/jarvis-hmi/jarvis/store"
	"github.com/jarvis-hmi/jarvis/watchdog"
)

// The loops' intervals that the configuration does not set. (The
// evaluator ticks every tripwires.tick, the lease is renewed every third
// of workspace.lease_ttl, and the fleet's sweep follows the agents'
// cadences: see fleetSweepInterval.)
const (
	// breakerSweepInterval is how often half-open breakers left
	// unverified past breaker.half_open_timeout are opened again.
	breakerSweepInterval = 5 * time.Second
	// cardSweepInterval is how often card questions are checked for a
	// reminder or a deadline that has come.
	cardSweepInterval = 30 * time.Second
	// reminderSweepInterval is how often reminders that have come due are
	// delivered, and the digests of quiet hours that have ended.
	reminderSweepInterval = 5 * time.Second
	// awayRecordInterval is how often the record of what needs someone,
	// and that Jarvis was running, is written for the "While I was away"
	// message: the downtime it measures is this much too short at most.
	awayRecordInterval = 30 * time.Second
	// approvalSweepInterval is how often approval requests are checked for
	// a deadline that has come: an agent waits on the answer.
	approvalSweepInterval = 5 * time.Second
	// attestationSweepInterval is how often the verdicts on attestation
	// subjects are combined into their outcomes, and a change relayed.
	attestationSweepInterval = 2 * time.Second
	// oncallSweepInterval is how often alerts are checked for one that
	// waited oncall.escalate_after for a claim, whose owner is due a
	// reminder, whose claim lapsed, or whose snooze ended.
	oncallSweepInterval = 5 * time.Second
	// wakeInterval is how often the wake router reconciles when no change
	// has asked it to sooner.
	wakeInterval = 30 * time.Second
	// intakeSweepInterval is how often the holder looks for notices that
	// agents' reports stored on another Jarvis caused, should that
	// Jarvis's notification be lost: well within the halt's bound.
	intakeSweepInterval = time.Second
	// intakeGap is the least time between two rounds of intakeLoop: a
	// standby taking thousands of reports a second wakes the holder ten
	// times a second, and a halt it stored still reaches the room well
	// within the halt's bound.
	intakeGap = 100 * time.Millisecond
	// retentionInterval is how often rows past their retention window are
	// deleted.
	retentionInterval = time.Hour
	// turnResumeFactor times model.timeout is how long after its message a
	// model turn a restart cut short is run again; an older one is answered
	// by the grammar, saying the model's answer was cut off.
	turnResumeFactor = 3
	// changeGap is the least time between two rounds of the loops that
	// changes ask for: the tripwires' re-evaluation and the wake router.
	// Under a stream of heartbeats and journal entries they would
	// otherwise run back to back, each one transaction over every
	// tripwire that reads the fleet or every agent's current journal, and
	// keep the store's one writer (and a core) busy while people wait for
	// their answers. The changes made meanwhile wait for the next round,
	// so a trip or a wake notice on a change comes within this long, not
	// at once.
	changeGap = time.Second
	// restartDrainTimeout is how long `!sys restart` waits for the outbox
	// to empty before it restarts anyway.
	restartDrainTimeout = 15 * time.Second
	// drainPollInterval is how often the outbox is looked at while it
	// drains.
	drainPollInterval = 100 * time.Millisecond
)

// logLines is how many of the newest log lines `!sys logs` can show.
const logLines = 1000

// ErrStopped means a signal came before Jarvis was up: a clean stop.
var ErrStopped = errors.New("stopped while starting")

// ErrRestart ends Run when `!sys restart` asked for a fresh process: see
// Reexec.
var ErrRestart = errors.New("restart asked")

// App is one running Jarvis: the configuration, the store, the Matrix
// bot, the core services, the command processor and the HTTP API, wired
// together. New builds it, Run runs its loops until the context ends,
// and Close closes the store once Run has returned.
type App struct {
	configPath string
	version    string
	cfg        *config.Config
	log        zerolog.Logger
	logs       *logring.Ring
	started    time.Time

	store  *store.Store
	outbox *store.Outbox
	clock  core.Clock
	// chat says when a person waits for an answer; agents' intake yields
	// to it.
	chat core.ChatFirst

	// watchdog pings the dead-man's switch while Jarvis is healthy.
	watchdog *watchdog.Pinger
	// boot is this start of Jarvis.
	boot watchdog.Boot

	// bot is nil in a console, which never talks to Matrix itself.
	bot   *bot.Bot
	proc  *commands.Processor
	lease *lease.Lease
	room  string
	// relay acts on what people type in consoles, while this process
	// holds the lease.
	relay *console.Relay

	policy      *bridge.Policy
	approvals   *approval.Service
	away        *away.Service
	breakers    *breaker.Service
	cards       *card.Service
	credentials *credential.Service
	fleet       *fleet.Service
	oncall      *oncall.Service
	alerts      *alertmanager.Service
	tripwires   *tripwire.Service
	reminders   *reminder.Service
	quiet       *quiet.Service
	notebook    *notebook.Service
	router      *wake.Router
	retention   *retention.Service
	// api is nil when api.listen is empty.
	api *api.Server
	// model is nil when no model is configured; turns are its turns in
	// flight, which Run waits for.
	model *model.Client
	turns sync.WaitGroup

	// changed holds the source kinds whose state moved since the
	// tripwires reading them were last re-evaluated; kick wakes the
	// re-evaluating loop, wakeKick the wake router's.
	changedMu sync.Mutex
	changed   map[string]bool
	kick      trigger
	wakeKick  trigger
	// pruneKick asks for a retention pass, when the lease is gained: a
	// Jarvis restarted more often than retentionInterval still prunes.
	pruneKick trigger
	// leaseKick asks the lease's loop for a round now: another Jarvis
	// released the lease.
	leaseKick trigger
	// intakeKick asks the holder to do what follows from the agents'
	// reports another Jarvis stored (intakeLoop).
	intakeKick trigger
	// restart is `!sys restart`, asked once.
	restart chan struct{}
	// lastTick is the evaluator's last pass, for `!sys status`.
	lastTick atomic.Pointer[commands.TickSummary]
	// lastRetention is the retention loop's last pass, for `!sys status`.
	lastRetention atomic.Pointer[retention.Report]
	// systemd hears that Jarvis is up and alive.
	systemd *notifier
}

// New loads the configuration at configPath, opens the store (upgrading
// it), logs in to Matrix and joins the dedicated room, and wires the
// services, the commands and the API; version is this build's, for the log
// and `!sys status`. A failure is of its kind (see Kind); a signal before
// Jarvis is up is ErrStopped.
func New(ctx context.Context, configPath, version string) (*App, error) {
	cfg, err := config.Load(configPath)
	if err != nil {
		return nil, fail(ErrConfig, err)
	}
	var generated []string
	if cfg.Bot.Encryption.Enabled && cfg.Bot.Encryption.PickleKey == bot.GeneratePickleKey {
		if generated, err = config.GenerateSecrets(configPath); err != nil {
			return nil, fail(ErrConfig, err)
		}
		if cfg, err = config.Load(configPath); err != nil {
			return nil, fail(ErrConfig, err)
		}
	}
	if cfg.Homeserver.URL == "" {
		return nil, fail(ErrConfig, core.Invalid("homeserver.url", "is empty: Jarvis lives in a Matrix room; a workspace with no homeserver is used with `jarvis console`"))
	}
	if err := fitsWatchdog(cfg.Workspace.LeaseTTL); err != nil {
		return nil, fail(ErrConfig, err)
	}
	a, err := openApp(ctx, configPath, version, cfg, nil)
	if err != nil {
		return nil, err
	}
	if len(generated) > 0 {
		a.log.Info().Strs("keys", generated).Str("file", configPath).Msg("Wrote fresh secrets in place of generate")
	}
	for name, closest := range config.UnknownEnvironment() {
		a.log.Warn().Str("variable", name).Str("closest", closest).Msg("An environment variable named like Jarvis's sets no key; ignored")
	}
	a.initProcessor()
	if err := a.initMatrix(ctx); err != nil {
		a.Close()
		return nil, err
	}
	a.initLease()
	if err := a.initServices(ctx); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.initWatchdog(ctx); err != nil {
		a.Close()
		return nil, fail(ErrStore, err)
	}
	if err := a.initModel(); err != nil {
		a.Close()
		return nil, fail(ErrConfig, err)
	}
	// A turn with the model takes seconds: off the sync loop, it holds
	// up nobody else's messages; Run waits for the turns in flight.
	a.proc.RunModelTurnsWith(func(fn func()) {
		a.turns.Add(1)
		go func() {
			defer a.turns.Done()
			fn()
		}()
	})
	a.initCommands()
	a.initAPI()
	return a, nil
}

// openApp starts an application on the configuration: the logger, which
// writes to logOut as well as to the ring `!sys logs` reads (to stderr when
// nil), and the store, upgraded.
func openApp(ctx context.Context, configPath, version string, cfg *config.Config, logOut io.Writer) (*App, error) {
	a := &App{
		configPath: configPath,
		version:    version,
		cfg:        cfg,
		logs:       logring.New(logLines),
		started:    time.Now(),
		clock:      core.SystemClock{},
		changed:    map[string]bool{},
		kick:       newTrigger(),
		wakeKick:   newTrigger(),
		pruneKick:  newTrigger(),
		leaseKick:  newTrigger(),
		intakeKick: newTrigger(),
		restart:    make(chan struct{}, 1),
	}
	a.log = newLogger(cfg.Logging, a.logs, logOut)
	a.systemd = &notifier{log: a.log}
	a.log.Info().Str("version", a.version).Str("workspace", cfg.Workspace.ID).Msg("Starting Jarvis")

	if err := checkPrivate(configPath, cfg.Store); err != nil {
		return nil, err
	}
	var err error
	a.store, err = store.Open(ctx, cfg.Store, a.log)
	if err != nil {
		return nil, fail(ErrStore, err)
	}
	a.outbox = a.store.Outbox()
	// Who may talk to Jarvis, and who a sender is, is the configuration's
	// whether or not a homeserver is wired: the API asks it of an
	// approval request's approver in a console too.
	a.policy, err = bridge.NewPolicy(cfg.Bot.AllowedUsers, cfg.Bot.Admins, cfg.Bridges, a.store)
	if err != nil {
		a.store.Close()
		return nil, fail(ErrConfig, err)
	}
	return a, nil
}

// initProcessor builds the command processor, which every channel hands
// what people say to.
func (a *App) initProcessor() {
	zone, _ := a.cfg.Chat.Location() // checked when the configuration was read
	a.proc = commands.NewProcessor(commands.Config{Prefix: a.cfg.Bot.CommandPrefix, Admins: a.cfg.Bot.Admins,
		SenderLimit: a.cfg.Chat.SenderLimit, Zone: zone, Snooze: a.cfg.Chat.Snooze},
		commands.Deps{Tx: a.store, Outbox: a.outbox, Handled: a.store, Notices: a.outbox, Pending: a.store,
			Excerpts: a.store, Turns: a.store, Clock: a.clock, Chat: &a.chat})
}

// initMatrix builds the bot, logs in and joins the dedicated room.
func (a *App) initMatrix(ctx context.Context) error {
	var err error
	a.bot, err = bot.New(a.cfg.Homeserver, a.cfg.Bot, bot.Deps{
		State:     a.store,
		Outbox:    a.outbox,
		Wake:      a.outbox.Wake,
		Processor: a.proc,
		Policy:    a.policy,
		Clock:     a.clock,
		Gate:      a.checkLease,
		Leader:    a.leader,
		Images:    a.drawChart,
		DB:        a.store.DB,
		Synced:    a.systemd.synced,
		Chat:      &a.chat,
	}, a.log)
	if err != nil {
		return fail(ErrConfig, err)
	}
	if err := a.bot.Prepare(ctx); err != nil {
		if ctx.Err() != nil {
			return ErrStopped
		}
		if errors.Is(err, core.ErrInvalid) {
			// A configured value the homeserver or the stored keys refuse,
			// such as a pickle key that does not decrypt the keys.
			return fail(ErrConfig, err)
		}
		return fail(ErrMatrix, fmt.Errorf("matrix: %w", err))
	}
	a.room = a.bot.RoomID()
	a.proc.AddNames(a.bot.Names(ctx)...)
	// The rooms of escalation tiers are joined, and named by their IDs in
	// the notices posted into them.
	for _, tier := range a.cfg.Oncall.Escalation {
		for i, to := range tier {
			if !oncall.IsRoom(to) {
				continue
			}
			if tier[i], err = a.bot.Join(ctx, to); err != nil {
				return fail(ErrMatrix, fmt.Errorf("oncall.escalation: %w", err))
			}
		}
	}
	return nil
}

// initLease builds the workspace lease, whose notices go to the dedicated
// room, and fences every write with it.
func (a *App) initLease() {
	a.lease = lease.New(a.cfg.Workspace.Lease(), lease.Deps{Holder: holderName(), Store: a.store.Leases(), Tx: a.store,
		Outbox: a.outbox, Clock: a.clock, Room: a.room, Released: a.leaseKick,
		OnError: func(err error) { a.log.Err(err).Msg("Failed to keep the workspace lease") },
		OnRound: a.systemd.leaseRound})
	// Every write transaction checks, inside it, that this Jarvis still
	// holds the lease under the epoch it knows: one fence for chat, the
	// API, the loops and the outbox.
	a.store.SetFence(a.lease.FenceHeld)
}

// leader says whether this Jarvis holds the workspace lease. It and
// checkLease reach the lease for the bot, which is built before it (its
// notices go to the room the bot finds at login); nothing calls them
// before Run.
func (a *App) leader() bool { _, held := a.lease.Holding(); return held }

// checkLease holds a send back unless this Jarvis holds the lease: the
// sender asks before every batch, and it reads the lease row.
func (a *App) checkLease(ctx context.Context) error { return a.lease.Check(ctx) }

// initServices builds the core services on the store, in the dedicated
// room, their writes fenced by the workspace lease, and the source
// registry the tripwires read.
func (a *App) initServices(ctx context.Context) error {
	st, outbox, clock, room, admins := a.store, a.outbox, a.clock, a.room, a.cfg.Bot.Admins
	a.oncall = oncall.NewService(a.cfg.Oncall, oncall.Deps{Store: st.Incidents(), Tx: st, Outbox: outbox, Clock: clock, Admins: admins,
		Room: room})
	a.alerts = alertmanager.NewService(a.cfg.Alertmanager, alertmanager.Deps{Oncall: a.oncall, Tx: st, Clock: clock, RoomID: room, Admins: admins})
	a.breakers = breaker.NewService(a.cfg.Breaker, breaker.Deps{Store: st.Breakers(), Tx: st, Outbox: outbox, Clock: clock,
		Room: room, Admins: admins, Incidents: a.oncall,
		OnChange: func(string) { a.sourcesChanged(breaker.SourceState) }})
	a.credentials = credential.NewService(credential.Deps{Store: st.Credentials(), Clock: clock, Agents: a.agentNames})
	a.cards = card.NewService(a.cfg.Cards, card.Deps{Store: st.Cards(), Tx: st, Outbox: outbox, Clock: clock,
		Room: room, Admins: admins, WorkerNotes: a.workerNotes,
		OnChange: func(context.Context) {
			a.sourcesChanged(card.SourceKinds...)
			a.askWake()
		}})
	a.approvals = approval.NewService(a.cfg.Approvals, approval.Deps{Store: st.Approvals(), Tx: st, Outbox: outbox,
		Clock: clock, Room: room, Admins: admins, MayAsk: a.policy.Allowed, OnChange: a.askWake, Incidents: a.oncall})
	var err error
	a.fleet, err = fleet.NewService(a.cfg.Fleet, fleet.Deps{Tx: st, Heartbeats: st.Heartbeats(), Journal: st.AgentJournal(),
		Attestations: st.Attestations(), Meter: st.Meter(), Outbox: outbox, Clock: clock, Room: room, Admins: admins, History: st,
		Breakers: a.breakers, Work: a.workOf, Incidents: a.oncall, ParseSchedule: schedule.Parse, Agents: st.AddedAgents(),
		OnChange:  func() { a.sourcesChanged(fleet.SourceKinds...) },
		OnJournal: a.askWake})
	if err != nil {
		return fail(ErrConfig, err)
	}
	if err := a.fleet.ReadAgents(ctx); err != nil {
		return fail(ErrStore, err)
	}
	a.fleet.SetHoldings(a.holdings)
	a.fleet.AddSnapshotSection("breakers", func(ctx context.Context) (any, error) { return breakerSummary(ctx, a.breakers) })
	a.fleet.AddSnapshotSection("cards", func(ctx context.Context) (any, error) { return cardCounts(ctx, a.cards) })

	registry := core.NewSourceRegistry()
	a.breakers.RegisterSources(registry)
	if err := sources.Register(registry, a.cfg.Sources); err != nil {
		return fail(ErrConfig, err)
	}
	zone, _ := a.cfg.Chat.Location() // checked when the configuration was read
	a.quiet = quiet.NewService(quiet.Deps{Store: st.Quiet(), Tx: st, Outbox: outbox, Clock: clock, Zone: zone})
	a.tripwires = tripwire.NewService(a.cfg.Tripwires, tripwire.Deps{Store: st.Tripwires(), Tokens: st.TripwireTokens(),
		Tx: st, Outbox: outbox, Sources: registry, Clock: clock, History: st, Room: room, Quiet: a.quiet, Incidents: a.oncall,
		Silences: a.oncall, Chat: &a.chat, ChatPause: a.cfg.API.Intake.ChatPause})
	a.fleet.RegisterSources(registry)
	a.cards.RegisterSources(registry)
	a.router = wake.NewRouter(wake.Deps{Store: st, Tx: st, Outbox: outbox, Clock: clock, Room: room, Incidents: a.oncall,
		Sources: []wake.Source{
			{Name: "cards", List: a.cards.WakeConditions},
			{Name: "approvals", List: a.approvals.WakeConditions},
			{Name: "ci", List: func(ctx context.Context) ([]core.WakeCondition, error) {
				return wake.CIFailureConditions(ctx, a.fleet, a.cards)
			}},
		}})
	a.reminders = reminder.NewService(reminder.Deps{Store: st.Reminders(), Tx: st, Outbox: outbox, Clock: clock, Snooze: a.cfg.Chat.Snooze})
	a.notebook = notebook.NewService(st.Notebook(), clock)
	a.away = away.NewService(a.cfg.Workspace.Away(), away.Deps{State: st, Tx: st, Outbox: outbox, Clock: clock, Room: room,
		Sources: []away.Source{away.Breakers(a.breakers), away.Cards(a.cards), away.Approvals(a.approvals), away.Agents(a.fleet)}})
	a.retention = retention.New(a.cfg.Retention, retention.Deps{Store: st, Clock: clock, History: a.cfg.History})
	return nil
}

// initCommands registers the chat commands: !sys with its status
// sections and clearers, !card, !breaker, !link, the fleet and !tw.
func (a *App) initCommands() {
	sys := &commands.System{Version: a.version, Started: a.started, Logs: a.logs.Last, State: a.store,
		Restart: func() {
			select {
			case a.restart <- struct{}{}:
			default:
			}
		}}
	var matrix func() commands.MatrixHealth
	if a.bot != nil {
		matrix = func() commands.MatrixHealth { return commands.MatrixHealth(a.bot.Health()) }
	}
	var watch func(context.Context) (commands.WatchdogStatus, error)
	if a.watchdog != nil {
		watch = a.watchdogStatus
	}
	sys.Sections = commands.StatusSections(commands.Status{Homeserver: a.cfg.Homeserver.URL, Matrix: matrix,
		Lease: a.lease, Outbox: a.outbox, Store: a.store, Fleet: a.fleet, Breakers: a.breakers,
		Cards:         func(ctx context.Context) (map[string]int, error) { return cardCounts(ctx, a.cards) },
		LastTick:      a.lastTick.Load,
		LastRetention: a.lastRetention.Load,
		Watchdog:      watch})
	// Drafts belong to people: clearing a room drops its members' drafts.
	sys.Clearers = append(sys.Clearers, commands.DraftsClearer(a.cards, func(ctx context.Context, roomID string) ([]string, error) {
		if a.bot == nil || strings.HasPrefix(roomID, core.ConsolePrefix) {
			// A console's room has its user alone.
			return []string{roomID}, nil
		}
		resp, err := a.bot.Client.JoinedMembers(ctx, id.RoomID(roomID))
		if err != nil {
			return nil, err
		}
		members := make([]string, 0, len(resp.Joined))
		for user := range resp.Joined {
			members = append(members, user.String())
		}
		return members, nil
	}))
	sys.Clearers = append(sys.Clearers, func(ctx context.Context, roomID string) (string, error) {
		n, err := a.store.ClearExcerpts(ctx, roomID)
		if err != nil || n == 0 {
			return "", err
		}
		return fmt.Sprintf("%d remembered messages", n), nil
	})
	var talk converse.Model
	if a.model != nil {
		talk = a.model
		sys.Sections = append(sys.Sections, commands.StatusSection{Title: "Model", Lines: a.model.Status},
			commands.StatusSection{Title: "Persona", Verb: "persona", Help: "Who Jarvis is when it converses: alias, tone, language, what it may discuss, and the files it came from.",
				Lines: func(context.Context) ([]string, error) { return a.model.Persona().Lines(), nil }})
	}
	a.relay = console.NewRelay(console.RelayDeps{Inputs: a.store, Outbox: a.outbox, Processor: a.proc, Clock: a.clock})
	a.proc.AddFeatures(commands.Features{System: sys, Cards: a.cards, Approvals: a.approvals, Breakers: a.breakers, Identities: a.store, Fleet: a.fleet,
		Bridges: a.cfg.Bridges, SearchUsers: a.searchUsers,
		Tripwires: a.tripwires, Credentials: a.credentials, ProposalTTL: a.cfg.Chat.ProposalTTL, Agents: a.agentNames,
		Reminders: a.reminders, People: a.store.Reminders(), Quiet: a.quiet, Notebook: a.notebook, OnCall: a.oncall, Model: talk})
}

// initModel builds Jarvis's own language model when one is configured:
// the persona from its profile and override, the API key from its file
// or environment variable, the spend kept beside the agents'.
func (a *App) initModel() error {
	if !a.cfg.Model.Enabled() {
		return nil
	}
	persona, err := model.LoadPersona(a.cfg.Model.Persona)
	if err != nil {
		return err
	}
	c, err := model.New(a.cfg.Model, persona, a.store.Meter(), a.clock.Now)
	if err != nil {
		return err
	}
	// The workspace's budget is told to the room and its admins, as an
	// agent's is.
	c.AnnounceBudget(func(ctx context.Context, key, text string) {
		err := a.store.InTx(ctx, func(ctx context.Context) error {
			return a.outbox.Enqueue(ctx, core.Notice{Key: key, RoomID: a.room, Kind: core.NoticeMessage, Body: text, Mentions: a.cfg.Bot.Admins})
		})
		if err != nil && !errors.Is(err, core.ErrDuplicate) {
			zerolog.Ctx(ctx).Err(err).Msg("Failed to tell the room about the model's budget")
		}
	})
	a.model = c
	a.log.Info().Str("model", a.cfg.Model.Name).Dur("timeout", a.cfg.Model.Timeout).Msg("Conversing through a language model")
	return nil
}

// workOf is the cards agents work, for their heartbeat answers.
func (a *App) workOf(ctx context.Context, agents []string, since time.Time) (map[string][]fleet.WorkCard, error) {
	cards, err := a.cards.WorkOf(ctx, agents, since)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]fleet.WorkCard, len(cards))
	for agent, list := range cards {
		for _, c := range list {
			out[agent] = append(out[agent], fleet.WorkCard{ID: c.ID, State: string(c.State), Revision: c.Revision})
		}
	}
	return out, nil
}

// workerNotes is what a worker journaled about a card in its current
// cycle, for the card's mission report.
func (a *App) workerNotes(ctx context.Context, worker, cardID string) ([]card.WorkerNote, error) {
	entries, err := a.fleet.EntriesAbout(ctx, worker, cardID)
	notes := make([]card.WorkerNote, len(entries))
	for i, e := range entries {
		notes[i] = card.WorkerNote{Title: e.Title, Content: e.Content, At: e.Timestamp}
	}
	return notes, err
}

// holdings is what the fleet view shows of each agent beyond its
// heartbeats: its breaker, the cards it works that are not finished, and
// the CI failures it journaled on them in its current cycle.
func (a *App) holdings(ctx context.Context, agents []string) (map[string]fleet.Holding, error) {
	out := map[string]fleet.Holding{}
	breakers, err := a.breakers.StatusAll(ctx)
	if err != nil {
		return nil, err
	}
	for _, st := range breakers {
		name := a.fleet.AgentName(st.Agent)
		h := out[name]
		h.Breaker = string(st.State)
		out[name] = h
	}
	cards, err := a.cards.List(ctx, card.Filter{Limit: card.MaxListLimit})
	if err != nil {
		return nil, err
	}
	for _, c := range cards {
		if c.Worker == "" || c.State.Final() {
			continue
		}
		name := a.fleet.AgentName(c.Worker)
		h := out[name]
		h.Cards = append(h.Cards, fleet.HeldCard{ID: c.ID, State: string(c.State)})
		out[name] = h
	}
	var working []string
	for _, name := range agents {
		if len(out[name].Cards) > 0 {
			working = append(working, name)
		}
	}
	current, err := a.fleet.CurrentEvidence(ctx, working, wake.EvidenceCI)
	if err != nil {
		return nil, err
	}
	for _, name := range working {
		h := out[name]
		for _, e := range current[name] {
			for _, ev := range e.Evidence {
				held := slices.ContainsFunc(h.Cards, func(c fleet.HeldCard) bool { return c.ID == ev.Key })
				if ev.Type == wake.EvidenceCI && strings.EqualFold(fmt.Sprint(ev.Value), wake.EvidenceCIFailed) && held &&
					!slices.Contains(h.CIFailed, ev.Key) {
					h.CIFailed = append(h.CIFailed, ev.Key)
				}
			}
		}
		out[name] = h
	}
	return out, nil
}

// searchUsers asks the homeserver's user directory for users whose ID or
// display name holds term, for `!link network:handle`.
func (a *App) searchUsers(ctx context.Context, term string) ([]bridge.User, error) {
	if a.bot == nil {
		return nil, errors.New("search the user directory: this console does not talk to the homeserver")
	}
	resp, err := a.bot.Client.SearchUserDirectory(ctx, term, 50)
	if err != nil {
		return nil, fmt.Errorf("search the user directory: %w", err)
	}
	users := make([]bridge.User, len(resp.Results))
	for i, u := range resp.Results {
		users[i] = bridge.User{UserID: u.UserID.String(), DisplayName: u.DisplayName}
		// The directory's results name it display_name, profiles displayname.
		if name, ok := u.Extra["display_name"].(string); ok && users[i].DisplayName == "" {
			users[i].DisplayName = name
		}
	}
	return users, nil
}

// agentNames lists the fleet's agents by name.
func (a *App) agentNames() []string {
	agents := a.fleet.Agents()
	names := make([]string, len(agents))
	for i, agent := range agents {
		names[i] = agent.Name
	}
	return names
}

// initAPI builds the HTTP API with /healthz and every feature's routes,
// unless api.listen is empty.
func (a *App) initAPI() {
	if a.cfg.API.Listen == "" {
		return
	}
	a.api = api.New(a.cfg.API, a.log, a.health, a.credentials)
	a.api.RefuseWritesWhen(a.standby)
	if a.store.DB.Dialect == dbutil.Postgres {
		// Every Jarvis on the database stores what agents report; the
		// holder does what follows (intakeLoop).
		a.api.ServeIntakeEverywhere()
	}
	a.api.YieldTo(&a.chat)
	api.RegisterBreaker(a.api, a.breakers, a.fleet)
	api.RegisterFleet(a.api, a.fleet, a.breakers)
	api.RegisterAgents(a.api, a.fleet)
	api.RegisterTripwires(a.api, a.tripwires)
	api.RegisterCards(a.api, a.cards, a.breakers)
	api.RegisterCalendar(a.api, api.Calendar{Citizen: a.tripwires.CitizenForFeedToken, Reminders: a.reminders.List,
		Tasks: func(ctx context.Context, owner string) ([]notebook.Entry, error) {
			return a.notebook.List(ctx, owner, notebook.Task)
		}, Now: a.clock.Now})
	api.RegisterApprovals(a.api, a.approvals, a.breakers)
	api.RegisterAlertmanager(a.api, a.alerts)
	api.RegisterSilences(a.api, a.oncall, a.room, a.fleet)
}

// standby refuses the API's writes while this Jarvis does not hold the
// workspace lease, naming the holder when there is one.
func (a *App) standby(ctx context.Context) error {
	if a.leader() {
		return nil
	}
	rec, err := a.lease.Current(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", core.ErrStaleEpoch, err)
	}
	return &lease.HeldError{Lease: rec}
}

// health is the state /healthz shows.
func (a *App) health(ctx context.Context) (api.Health, error) {
	depth, err := a.outbox.Depth(ctx)
	if err != nil {
		return api.Health{}, fmt.Errorf("outbox: %w", err)
	}
	if a.bot == nil {
		// A console with no homeserver serves the API.
		return api.Health{Leader: a.leader(), OutboxDepth: depth, RoomID: a.room}, nil
	}
	h := a.bot.Health()
	return api.Health{DeviceID: h.DeviceID, Encryption: h.Encryption, LastSync: h.LastSync, Leader: a.leader(),
		OutboxDepth: depth, RoomID: h.RoomID, SyncError: h.SyncError, Synced: !h.LastSync.IsZero(), UserID: h.UserID}, nil
}

// Run runs Jarvis until ctx ends, a loop fails (the error is of its kind:
// see Kind), or `!sys restart` drained the outbox (ErrRestart). Every loop
// runs in one errgroup, and Run returns only when all of them have ended.
func (a *App) Run(ctx context.Context) error {
	// One Jarvis a process: a second App in the same process (a test's)
	// finds the gauges registered, and /metrics counts through the first.
	if c := (gauges{store: a.store, log: a.log}); metrics.Registry.Register(c) == nil {
		defer metrics.Registry.Unregister(c)
	}
	g, ctx := errgroup.WithContext(ctx)
	if a.api != nil {
		g.Go(func() error {
			if err := a.api.Run(ctx); err != nil {
				return fail(ErrAPI, fmt.Errorf("api: %w", err))
			}
			return nil
		})
	}
	g.Go(func() error {
		if err := a.bot.Run(ctx); err != nil && ctx.Err() == nil {
			return fail(ErrMatrix, fmt.Errorf("matrix: %w", err))
		}
		return nil
	})
	g.Go(func() error {
		a.keepLease(ctx, a.leaseChanged)
		return nil
	})
	g.Go(func() error {
		a.watchdog.Run(ctx)
		return nil
	})
	g.Go(func() error {
		reloadOnHangup(ctx, a.log, a.configPath, a.reload)
		return nil
	})
	g.Go(func() error {
		// On PostgreSQL, other Jarvis processes say at once when they
		// release the lease or enqueue a notice; the loops still poll.
		a.store.Listen(ctx, map[string]func(){store.LeaseReleased: a.leaseKick.ask, store.OutboxWork: a.outbox.WakeSender,
			store.IntakeWork: a.intakeKick.ask},
			a.cfg.Workspace.LeaseTTL/3, func(err error) { a.log.Err(err).Msg("Failed to listen for other Jarvis processes") })
		return nil
	})
	if a.store.DB.Dialect == dbutil.Postgres {
		g.Go(func() error {
			// A standby serves the agents too: it learns the agents added
			// on the holder as the holder's fleet sweep does.
			every(ctx, fleetSweepInterval(a.cfg.Fleet), func() {
				if a.leader() {
					return
				}
				if err := a.fleet.ReadAgents(ctx); err != nil && ctx.Err() == nil {
					a.log.Err(err).Msg("Failed to read the agents added over the API")
				}
			})
			return nil
		})
	}
	g.Go(func() error {
		select {
		case <-a.restart:
			a.log.Info().Msg("Restart asked: draining the outbox")
			drainOutbox(ctx, a.outbox, restartDrainTimeout)
			return ErrRestart
		case <-ctx.Done():
			return nil
		}
	})
	err := g.Wait()
	// The model's turns end with the sync's context.
	a.turns.Wait()
	if err == nil || errors.Is(err, ErrRestart) {
		a.markStopped()
	}
	return err
}

// keepLease keeps the workspace lease until ctx ends, or takes it when it
// lapses, and leads (see lead) while it holds it; changed hears of every
// change after the loops started or stopped.
func (a *App) keepLease(ctx context.Context, changed func(ctx context.Context, held bool, epoch int64)) {
	var stop func()
	_ = a.lease.Run(ctx, func(held bool, epoch int64) {
		if stop != nil {
			stop()
			stop = nil
		}
		if held {
			stop = a.lead(ctx)
		}
		changed(ctx, held, epoch)
	})
	if stop != nil {
		stop()
	}
}

// Close closes the store. Call it once, after Run has returned: by then
// every goroutine Jarvis started has ended.
func (a *App) Close() error {
	return a.store.Close()
}

// Log is the application's logger, which `!sys logs` reads too.
func (a *App) Log() *zerolog.Logger { return &a.log }

// lead starts the loops that write on their own (the tripwire evaluator
// and re-evaluation, the wake router, the breaker, card and fleet sweeps,
// retention), for as long as this Jarvis holds the workspace lease: Run
// calls it when the lease is gained, and the stop it returns, which
// cancels them and waits until every one has ended, when it is lost. A
// standby runs none of them. (The store's fence refuses what one of them
// might still write between the loss and the stop.)
func (a *App) lead(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var loops sync.WaitGroup
	// The tripwire loops log, with the detail, why a source could not be
	// read; its owner is told the reason alone.
	twCtx := a.log.With().Str("component", "tripwires").Logger().WithContext(ctx)
	loops.Go(func() {
		var started time.Time
		a.tripwires.Run(twCtx, func(r tripwire.TickReport, err error) {
			now := time.Now()
			if !started.IsZero() {
				a.lastTick.Store(&commands.TickSummary{At: now, Report: r, Err: err})
			}
			started = now
			if err != nil {
				a.log.Err(err).Msg("Tripwire evaluator pass failed")
				return
			}
			a.log.Debug().Interface("report", r).Msg("Tripwire evaluator pass")
		})
	})
	loops.Go(func() { a.reevaluateLoop(twCtx) })
	loops.Go(func() { a.relay.Run(a.log.With().Str("component", "console").Logger().WithContext(ctx)) })
	// Before anything else writes: what changed while no Jarvis acted.
	if _, err := a.away.Resume(ctx); err != nil && ctx.Err() == nil {
		a.log.Err(err).Msg("Failed to tell what changed while Jarvis was away")
	}
	// The model turns a crash or a restart cut short are answered: run
	// again, or by the grammar when they started too long ago.
	modelCtx := a.log.With().Str("component", "model").Logger().WithContext(ctx)
	if err := a.proc.ResumeTurns(modelCtx, turnResumeFactor*a.cfg.Model.Timeout); err != nil && ctx.Err() == nil {
		a.log.Err(err).Msg("Failed to resume the model turns a restart cut short")
	}
	// A mute timing whose window holds now holds from the start, before
	// the first sweep of the fleet.
	if _, err := a.oncall.Mute(ctx); err != nil && ctx.Err() == nil {
		a.log.Err(err).Msg("Failed to open mute timings")
	}
	sweep := func(interval time.Duration, doing string, fn func(context.Context) error) {
		loops.Go(func() {
			every(ctx, interval, func() {
				if err := fn(ctx); err != nil && ctx.Err() == nil {
					a.log.Err(err).Msg("Failed to " + doing)
				}
			})
		})
	}
	sweep(awayRecordInterval, "record what needs someone", a.away.Record)
	// Gaining the lease asks for a wake round and a retention pass at once.
	a.askWake()
	a.pruneKick.ask()
	loops.Go(func() { a.wakeLoop(ctx) })
	loops.Go(func() { a.intakeLoop(ctx) })
	loops.Go(func() { a.retentionLoop(ctx) })
	sweep(breakerSweepInterval, "sweep breakers", uncounted(a.breakers.Sweep))
	sweep(cardSweepInterval, "sweep card questions", uncounted(a.cards.Sweep))
	// Reminders due while no Jarvis ran go out on the first sweep, late;
	// so do the digests of quiet hours that ended meanwhile.
	sweep(reminderSweepInterval, "deliver reminders", uncounted(a.reminders.Sweep))
	sweep(reminderSweepInterval, "deliver quiet-hours digests", uncounted(a.quiet.Sweep))
	sweep(approvalSweepInterval, "sweep approval requests", uncounted(a.approvals.Sweep))
	sweep(attestationSweepInterval, "decide attestations", uncounted(a.fleet.DecideAttestations))
	sweep(oncallSweepInterval, "escalate unclaimed alerts", uncounted(a.oncall.Escalate))
	sweep(oncallSweepInterval, "wake snoozed alerts", uncounted(a.oncall.Wake))
	sweep(oncallSweepInterval, "remind owners of open alerts", uncounted(a.oncall.Remind))
	sweep(oncallSweepInterval, "lapse claims nobody renewed", uncounted(a.oncall.Lapse))
	sweep(oncallSweepInterval, "end silences", uncounted(a.oncall.EndSilences))
	sweep(oncallSweepInterval, "open mute timings", uncounted(a.oncall.Mute))
	sweep(fleetSweepInterval(a.cfg.Fleet), "sweep the fleet", a.fleet.Sweep)
	return func() {
		cancel()
		loops.Wait()
	}
}

// uncounted drops what a sweep counts, for a loop that only logs its
// failures.
func uncounted[T any](sweep func(context.Context) (T, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := sweep(ctx)
		return err
	}
}

// reload applies what a reloaded configuration may change without a
// restart: the fleet's agents. (API credentials live in the store: see
// `jarvis token`.)
func (a *App) reload(next *config.Config) {
	if err := a.fleet.SetConfig(next.Fleet); err != nil {
		a.log.Err(err).Msg("Failed to reload the fleet's agents")
	}
}

// sourcesChanged notes that the state behind kinds moved (a breaker, a
// card, an agent's report), so that the tripwires reading them are
// re-evaluated at once instead of at the next tick.
func (a *App) sourcesChanged(kinds ...string) {
	a.changedMu.Lock()
	for _, k := range kinds {
		a.changed[k] = true
	}
	a.changedMu.Unlock()
	a.kick.ask()
}

// intakeLoop does, for the holder, what follows from the agents' reports
// that another Jarvis on the database stored (on PostgreSQL every Jarvis
// serves the agents): it moves the notices they caused into the outbox,
// in their order and each once, re-evaluates the tripwires reading what
// they change, and asks the wake router for a round. It runs when that
// Jarvis notifies (store.IntakeWork), at once when the lease is gained
// (what the last holder left), and every intakeSweepInterval, for a
// notification lost while no listener was connected. On SQLite only the
// holder stores reports, and it returns at once.
func (a *App) intakeLoop(ctx context.Context) {
	if a.store.DB.Dialect != dbutil.Postgres {
		return
	}
	ticker := time.NewTicker(intakeSweepInterval)
	defer ticker.Stop()
	kinds := slices.Concat(fleet.SourceKinds, card.SourceKinds, []string{breaker.SourceState})
	for notified := true; ; {
		n, err := a.outbox.MoveStaged(ctx)
		if err != nil && ctx.Err() == nil {
			a.log.Err(err).Msg("Failed to move the notices of agents' reports another Jarvis stored")
		}
		if notified || n > 0 {
			// The tick alone finds no report: it looks for lost notices.
			a.sourcesChanged(kinds...)
			a.askWake()
		}
		// However often the other Jarvis notifies under load, the holder
		// does this at most every intakeGap.
		select {
		case <-ctx.Done():
			return
		case <-time.After(intakeGap):
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			notified = false
		case <-a.intakeKick:
			notified = true
		}
	}
}

// askWake asks the wake router to reconcile soon.
func (a *App) askWake() { a.wakeKick.ask() }

// drawChart draws the chart an image notice asks for, from the sources'
// history.
func (a *App) drawChart(ctx context.Context, request string) (bot.Image, error) {
	loc, _ := a.cfg.History.Location() // checked when the configuration was read
	png, words, err := chart.Draw(ctx, a.store, request, loc)
	return bot.Image{PNG: png, Width: chart.Width, Height: chart.Height, Description: words}, err
}

// retentionLoop deletes what is past its retention window every
// retentionInterval and when asked (the lease was gained), and keeps each
// pass's report for `!sys status`.
func (a *App) retentionLoop(ctx context.Context) {
	ticker := time.NewTicker(retentionInterval)
	defer ticker.Stop()
	rounds(ctx, a.pruneKick, ticker.C, func() {
		r := a.retention.Pass(ctx)
		a.lastRetention.Store(&r)
		if r.Err != nil && ctx.Err() == nil {
			a.log.Err(r.Err).Int("removed", r.Removed()).Msg("Retention pass failed")
			return
		}
		level := zerolog.DebugLevel
		if r.Removed() > 0 {
			level = zerolog.InfoLevel
		}
		a.log.WithLevel(level).Interface("report", r).Msg("Retention pass")
	})
}

// reevaluateLoop re-evaluates the tripwires that read the kinds that
// changed, once per round whatever the number of changes, rounds at least
// changeGap apart.
func (a *App) reevaluateLoop(ctx context.Context) {
	rounds(ctx, a.kick, nil, spaced(ctx, changeGap, func() {
		a.changedMu.Lock()
		kinds := make([]string, 0, len(a.changed))
		for k := range a.changed {
			kinds = append(kinds, k)
		}
		clear(a.changed)
		a.changedMu.Unlock()
		slices.Sort(kinds)
		if _, err := a.tripwires.Reevaluate(ctx, kinds...); err != nil && ctx.Err() == nil {
			a.log.Err(err).Strs("kinds", kinds).Msg("Failed to re-evaluate tripwires")
		}
	}))
}

// wakeLoop reconciles the wake router every wakeInterval and when asked,
// rounds at least changeGap apart.
func (a *App) wakeLoop(ctx context.Context) {
	ticker := time.NewTicker(wakeInterval)
	defer ticker.Stop()
	rounds(ctx, a.wakeKick, ticker.C, spaced(ctx, changeGap, func() {
		if _, err := a.router.Reconcile(ctx); err != nil && ctx.Err() == nil {
			a.log.Err(err).Msg("Wake router failed to reconcile")
		}
	}))
}
