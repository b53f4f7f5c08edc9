// Package bot is the Matrix side of Jarvis: login, sync, room membership,
// and sending everything the outbox holds.
package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
)

// Config is the bot's part of the configuration.
type Config struct {
	// UserID is Jarvis's Matrix user.
	UserID string
	// Password logs in when no access token is configured or stored.
	Password string
	// AccessToken, when set, is used instead of a password login.
	AccessToken string
	// DeviceName is shown in people's device lists.
	DeviceName string
	// Room is the alias or ID of the dedicated room.
	Room string
	// CommandPrefix starts a command.
	CommandPrefix string
	// Admins may run admin verbs.
	Admins []string
	// AllowedUsers are MXID glob patterns of people Jarvis answers.
	AllowedUsers []string
	// Encryption is end-to-end encryption.
	Encryption EncryptionConfig
}

// Validate checks the config.
func (c Config) Validate() error {
	if _, _, err := id.UserID(c.UserID).Parse(); err != nil {
		return core.Invalid("bot.user_id", "must be a Matrix user ID like @jarvis:example.org")
	}
	if c.Password == "" && c.AccessToken == "" {
		return core.Invalid("bot.password", "a password or bot.access_token is required")
	}
	if !strings.HasPrefix(c.Room, "#") && !strings.HasPrefix(c.Room, "!") {
		return core.Invalid("bot.room", "must be a room alias (#jarvis:example.org) or ID (!abc:example.org)")
	}
	if c.CommandPrefix == "" || strings.ContainsAny(c.CommandPrefix, " \t\n") {
		return core.Invalid("bot.command_prefix", "must be non-empty without spaces")
	}
	for i, admin := range c.Admins {
		if _, _, err := id.UserID(admin).Parse(); err != nil {
			return core.Invalid("bot.admins", "entry %d (%q) is not a Matrix user ID", i, admin)
		}
	}
	if c.Encryption.Enabled && c.Encryption.PickleKey == "" {
		return core.Invalid("bot.encryption.pickle_key", "is required while bot.encryption.enabled is true: a long random secret that protects the keys in the database")
	}
	if len(c.AllowedUsers) == 0 {
		return core.Invalid("bot.allowed_users", "list at least one pattern, e.g. \"@*:example.org\"")
	}
	_, err := bridge.NewPolicy(c.AllowedUsers, nil, bridge.Config{}, nil)
	return err
}

// StateStore keeps the bot's own state across restarts.
type StateStore interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
}

// OutboxStore is the outbox as the sender sees it.
type OutboxStore interface {
	Waiting(ctx context.Context, limit int) ([]core.OutboxEntry, error)
	Get(ctx context.Context, key string) (core.OutboxEntry, error)
	AssignBatch(ctx context.Context, b core.Batch) error
	MarkAttempt(ctx context.Context, keys []string, at time.Time) error
	MarkSent(ctx context.Context, keys []string, eventID string, at time.Time) error
	MarkFailed(ctx context.Context, keys []string, cause error, next time.Time) error
	MarkRefused(ctx context.Context, keys []string, cause error, next time.Time) error
	GiveUp(ctx context.Context, keys []string, cause error, at time.Time) error
	RetryNow(ctx context.Context) error
	Enqueue(ctx context.Context, notices ...core.Notice) error
	DirectRoom(ctx context.Context, userID string) (string, error)
	SetDirectRoom(ctx context.Context, userID, roomID string) error
}

// Deps are what the bot needs from the rest of Jarvis.
type Deps struct {
	State     StateStore
	Outbox    OutboxStore
	Wake      <-chan struct{}
	Processor *commands.Processor
	Policy    *bridge.Policy
	Clock     core.Clock
	// Gate, when set, is asked before every send; an error holds the send
	// back (the workspace lease).
	Gate func(ctx context.Context) error
	// Leader, when set, tells whether this Jarvis holds the workspace
	// lease. Jarvis syncs, and so acts on messages, only while it does.
	Leader func() bool
	// Images draws what an image notice's body asks for (a chart).
	Images func(ctx context.Context, body string) (Image, error)
	// DB is Jarvis's database; with encryption on, the crypto store and
	// the room state store keep their own tables in it.
	DB *dbutil.Database
	// Synced, when set, hears the end of every sync Jarvis handled; the
	// first says Jarvis is up (systemd's READY).
	Synced func()
	// Chat, when set, hears that a person waits while a reply or a halt
	// (the outbox's urgent lane) is sent, so that agents' intake yields.
	Chat *core.ChatFirst
}

// Bot is Jarvis on Matrix.
type Bot struct {
	cfg    Config
	deps   Deps
	log    zerolog.Logger
	Client *mautrix.Client
	// matrix is Client, as the sender uses it.
	matrix matrixClient

	syncer *syncer
	crypto *cryptohelper.CryptoHelper

	mu       sync.Mutex
	roomID   id.RoomID
	lastSync time.Time
	syncErr  string
	rooms    map[id.RoomID]bridge.Room
	// joined is when Jarvis joined each room, in milliseconds.
	joined map[id.RoomID]int64

	// The sender loop alone uses these. unsettled is, by batch, when a
	// look in the room first missed an earlier attempt of a send whose
	// outcome was lost; refused holds the batches whose last send the
	// homeserver answered with an error, which made no event.
	unsettled map[string]time.Time
	refused   map[string]bool
}

// New builds the bot for the homeserver hs.
func New(hs HomeserverConfig, cfg Config, deps Deps, log zerolog.Logger) (*Bot, error) {
	cli, err := mautrix.NewClient(hs.URL, id.UserID(cfg.UserID), "")
	if err != nil {
		return nil, fmt.Errorf("homeserver.url: %w", err)
	}
	cli.Client = &http.Client{Transport: deadlineTransport{next: http.DefaultTransport, timeout: hs.RequestTimeout}}
	// One component a line: mautrix's lines are mautrix's, not the bot's too.
	cli.Log = log.With().Str("component", "mautrix").Logger().Level(zerolog.WarnLevel)
	log = log.With().Str("component", "bot").Logger()
	// The sender handles retries and 429s itself, from the outbox.
	cli.DefaultHTTPRetries = 0
	cli.IgnoreRateLimit = true
	b := &Bot{cfg: cfg, deps: deps, log: log, Client: cli, matrix: cli, rooms: map[id.RoomID]bridge.Room{},
		joined: map[id.RoomID]int64{}}
	// The syncer exists before login: the crypto helper hooks into it.
	b.syncer = &syncer{DefaultSyncer: mautrix.NewDefaultSyncer(), bot: b}
	cli.Syncer = b.syncer
	cli.Store = syncStore{state: deps.State}
	return b, nil
}

// RoomID returns the dedicated room, once known.
func (b *Bot) RoomID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.roomID.String()
}

// Health is the state of the bot on Matrix, for /healthz and !sys status.
type Health struct {
	UserID     string
	RoomID     string
	DeviceID   string
	Encryption bool
	// LastSync is when the last sync succeeded, in UTC; zero before the
	// first.
	LastSync time.Time
	// SyncError is why syncing fails, empty while it works.
	SyncError string
}

// Health reports the sync state for /healthz and !sys status.
func (b *Bot) Health() Health {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := Health{UserID: b.cfg.UserID, RoomID: b.roomID.String(), DeviceID: b.Client.DeviceID.String(),
		Encryption: b.Client.Crypto != nil, SyncError: b.syncErr}
	if !b.lastSync.IsZero() {
		h.LastSync = b.lastSync.UTC()
	}
	return h
}

// Prepare logs in and joins the dedicated room (creating it if needed),
// retrying while the homeserver is away. After it, RoomID is known.
func (b *Bot) Prepare(ctx context.Context) error {
	// The first start is marked before Jarvis is in any room: what people
	// say in the dedicated room as soon as it exists, before the first
	// sync, comes after the mark and is answered (see runSync).
	if _, err := b.firstStart(ctx); err != nil {
		return fmt.Errorf("record the first start: %w", err)
	}
	if err := b.retry(ctx, "log in", b.login); err != nil {
		return err
	}
	if err := b.retry(ctx, "set up encryption", b.initCrypto); err != nil {
		return err
	}
	if err := b.retry(ctx, "join the dedicated room", b.ensureRoom); err != nil {
		return err
	}
	b.log.Info().Str("room_id", b.RoomID()).Str("device_id", b.Client.DeviceID.String()).
		Bool("encryption", b.Client.Crypto != nil).Msg("Jarvis is in its room")
	return nil
}

// Names are the names a message may start with to address Jarvis: the
// localpart of its user ID and its display name, when it has one.
func (b *Bot) Names(ctx context.Context) []string {
	names := []string{id.UserID(b.cfg.UserID).Localpart()}
	if resp, err := b.Client.GetOwnDisplayName(ctx); err != nil {
		b.log.Warn().Err(err).Msg("Failed to read Jarvis's display name")
	} else if resp.DisplayName != "" {
		names = append(names, resp.DisplayName)
	}
	return names
}

// Run syncs and sends until ctx ends; call Prepare first. Losing the
// homeserver is not an error: it reconnects with back-off.
func (b *Bot) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.runSender(ctx)
	}()
	err := b.runSync(ctx)
	wg.Wait()
	return err
}

// permanentError marks a failure that trying again cannot mend.
type permanentError struct{ error }

// retry runs fn until it succeeds, ctx ends, or the homeserver refuses
// for good (a wrong password, a forbidden room), or fn says its failure is
// permanent.
func (b *Bot) retry(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	delay := 500 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return fmt.Errorf("%s: %w", what, perm.error)
		}
		var respErr mautrix.RespError
		if errors.As(err, &respErr) && respErr.StatusCode >= 400 && respErr.StatusCode < 500 && respErr.StatusCode != 429 {
			return fmt.Errorf("%s: %w", what, err)
		}
		b.log.Warn().Err(err).Dur("retry_in", delay).Msgf("Failed to %s, retrying", what)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}
