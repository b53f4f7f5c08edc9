// Package config is Jarvis's configuration: the sections of every package
// gathered in one struct, read from a YAML file over the defaults, which
// are config.example.yaml, embedded, and from the environment, and
// validated.
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/config/settings"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/alertmanager"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/away"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/retention"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/model"
	"github.com/jarvis-hmi/jarvis/schedule"
	"github.com/jarvis-hmi/jarvis/sources"
	"github.com/jarvis-hmi/jarvis/store"
	"github.com/jarvis-hmi/jarvis/watchdog"
)

// Example is config.example.yaml: every key, each with a comment above
// it, and its default value. A value whose line is marked "# example"
// only shows what to write there: that key has no default.
//
//go:embed config.example.yaml
var Example []byte

// Config is the whole configuration file. Each package owns the struct of
// its own section; this one only gathers them. A key of the file is the
// name of its field in snake_case (UserID is user_id, URLFetch is
// url_fetch): see settings.Key.
type Config struct {
	Homeserver bot.HomeserverConfig
	Bot        bot.Config
	Store      store.Config
	API        api.Config
	Logging    LoggingConfig
	Workspace  WorkspaceConfig
	Breaker    breaker.Config
	Fleet      fleet.Config
	Tripwires  tripwire.Config
	Sources    sources.Config
	Cards      card.Config
	Approvals  approval.Config
	Oncall     oncall.Config
	Bridges    bridge.Config
	Chat       ChatConfig
	Console    ConsoleConfig
	Retention  retention.Config
	History    history.Config
	// Alertmanager is the receiver of Alertmanager's notifications.
	Alertmanager alertmanager.Config
	// Watchdog is Jarvis's own dead-man's switch and restart count.
	Watchdog watchdog.Config
	// Model is Jarvis's own language model; none when its base URL is
	// empty.
	Model model.Config
}

// ConsoleConfig is the console section: `jarvis console`.
type ConsoleConfig struct {
	// Operator is the Matrix account of the person at the console, whose
	// tripwires' pushes a console shows too; empty means the first of
	// bot.admins.
	Operator string
}

// WorkspaceConfig names the workspace and sets its lease.
type WorkspaceConfig struct {
	ID        string
	LeaseTTL  time.Duration
	AwayAfter time.Duration
}

// Away is the workspace section as the "While I was away" message takes
// it.
func (w WorkspaceConfig) Away() away.Config { return away.Config{After: w.AwayAfter} }

// Lease is the workspace section as the lease takes it.
func (w WorkspaceConfig) Lease() lease.Config {
	return lease.Config{WorkspaceID: w.ID, TTL: w.LeaseTTL}
}

// ChatConfig sets how Jarvis converses.
type ChatConfig struct {
	// ProposalTTL is how long a tripwire Jarvis proposes from a sentence
	// waits for the proposer's ✅ (or reply "arm").
	ProposalTTL time.Duration
	// SenderLimit bounds how fast Jarvis answers one sender.
	SenderLimit commands.SenderLimit
	// TimeZone is the IANA time zone of a person who has not set their own
	// with `!me tz`; empty is UTC.
	TimeZone string
	// Snooze is how long ⏰ (or the reply `10m`) puts a reminder off.
	Snooze time.Duration
}

// Location is the time zone of a person who has not set their own.
func (c ChatConfig) Location() (*time.Location, error) {
	if c.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(c.TimeZone)
}

// Validate checks the chat section.
func (c ChatConfig) Validate() error {
	if c.ProposalTTL < time.Minute || c.ProposalTTL > 30*24*time.Hour {
		return core.Invalid("chat.proposal_ttl", "must be between 1m and 720h, got %s", c.ProposalTTL)
	}
	if c.SenderLimit.PerSecond <= 0 {
		return core.Invalid("chat.sender_limit.per_second", "must be positive, got %g", c.SenderLimit.PerSecond)
	}
	if c.SenderLimit.Burst < 1 {
		return core.Invalid("chat.sender_limit.burst", "must be at least 1, got %d", c.SenderLimit.Burst)
	}
	if _, err := c.Location(); err != nil {
		return core.Invalid("chat.time_zone", "%v", err)
	}
	if c.Snooze < time.Second || c.Snooze > 24*time.Hour {
		return core.Invalid("chat.snooze", "must be between 1s and 24h, got %s", c.Snooze)
	}
	return nil
}

// LoggingConfig sets how Jarvis logs.
type LoggingConfig struct {
	Level  string
	Format string
}

// Load reads the file (if path is not empty) over the defaults, applies
// environment overrides and validates the result. The defaults are
// config.example.yaml, embedded; every key in it is also registered, so
// that JARVIS_<SECTION>_<KEY> overrides any of them. A key still at the
// example's placeholder is refused, every one of them at once. An error
// about a key says where its value came from: the file and line, or the
// environment variable.
func Load(path string) (*Config, error) {
	s, err := settings.FromExample(Example)
	if err != nil {
		return nil, fmt.Errorf("the built-in config.example.yaml: %w", err)
	}
	s.Environment(envPrefix)
	var f *file
	if path != "" {
		if f, err = readFile(path); err != nil {
			return nil, err
		}
		if err := s.Read(bytes.NewReader(f.data)); err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if s.IsSet("api.agent_token") {
		return nil, fmt.Errorf("config: %w", f.at("api.agent_token", errSharedAgentToken))
	}
	if err := f.unknownKeys(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := placeholders(s, f); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var cfg Config
	if err := s.Decode("", &cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		var fe *core.FieldError
		if errors.As(err, &fe) {
			err = f.at(fe.Field, err)
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg.Store.IdleInTransactionTimeout = fenceHeldAtMost(cfg.Store.IdleInTransactionTimeout, cfg.Workspace.LeaseTTL)
	return &cfg, nil
}

// fenceHeldAtMost is how long PostgreSQL lets a session sit idle inside a
// transaction: idle, but no longer than the lease. A holder's transaction
// keeps the lease row locked (the fence) until it ends, and a standby's
// takeover waits for that lock; a holder cut off from the database (or
// frozen) in the middle of one would otherwise hold the takeover up for
// the whole idle timeout, far past the lease's length. 0 (off) is bounded
// by the lease too.
func fenceHeldAtMost(idle, leaseTTL time.Duration) time.Duration {
	if idle == 0 || idle > leaseTTL {
		return leaseTTL
	}
	return idle
}

// Defaults is the configuration config.example.yaml gives: its values,
// with no file and no environment over them, and not validated (the
// example's own values, such as the homeserver's URL, are no defaults).
// It panics if the embedded file does not decode, which a test rules out.
func Defaults() *Config {
	s, err := settings.FromExample(Example)
	var cfg Config
	if err == nil {
		err = s.Decode("", &cfg)
	}
	if err != nil {
		panic(fmt.Sprintf("the built-in config.example.yaml: %v", err))
	}
	return &cfg
}

// errSharedAgentToken refuses a configuration that still sets the one
// shared agent token of earlier versions.
var errSharedAgentToken = core.Invalid("api.agent_token",
	"is gone: every agent and role now has its own token. Remove api.agent_token, then issue tokens with "+
		"`jarvis token issue --config FILE --role agent --agent NAME` (one per agent), `--role supervisor` and "+
		"`--role orchestrator`, and give each agent its own (see \"Upgrading a workspace\" in docs/operating.md)")

// Validate checks every section.
func (c *Config) Validate() error {
	matrix := c.Homeserver.URL != ""
	switch c.Logging.Level {
	case "trace", "debug", "info", "warn", "error":
	default:
		return core.Invalid("logging.level", "must be trace, debug, info, warn or error, not %q", c.Logging.Level)
	}
	switch c.Logging.Format {
	case "auto", "pretty", "json":
	default:
		return core.Invalid("logging.format", "must be auto, pretty or json, not %q", c.Logging.Format)
	}
	sections := []interface{ Validate() error }{c.Store, c.API, c.Workspace.Lease(), c.Workspace.Away(), c.Breaker, c.Fleet, c.Cards, c.Approvals, c.Oncall, c.Tripwires, c.Sources, c.Bridges, c.Chat, c.Retention, c.History, c.Alertmanager, c.Watchdog, c.Model}
	// The homeserver and bot sections are Matrix's: a workspace with no homeserver uses
	// only its command prefix and admins.
	if matrix {
		sections = append(sections, c.Homeserver, c.Bot)
	}
	for _, section := range sections {
		if err := section.Validate(); err != nil {
			return err
		}
	}
	for i, a := range c.Fleet.Agents {
		if a.Schedule != "" {
			if _, err := schedule.Parse(fmt.Sprintf("fleet.agents[%d]", i), a.Schedule, a.TimeZone); err != nil {
				return err
			}
		}
	}
	return nil
}
