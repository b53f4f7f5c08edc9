package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/sources"
	"github.com/jarvis-hmi/jarvis/store"
)

// Config is the whole configuration file. Each package owns the struct of
// its own section; this one only gathers them.
type Config struct {
	Homeserver HomeserverConfig `mapstructure:"homeserver"`
	Bot        bot.Config       `mapstructure:"bot"`
	Store      store.Config     `mapstructure:"store"`
	API        api.Config       `mapstructure:"api"`
	Logging    LoggingConfig    `mapstructure:"logging"`
	Workspace  lease.Config     `mapstructure:"workspace"`
	Breaker    breaker.Config   `mapstructure:"breaker"`
	Fleet      fleet.Config     `mapstructure:"fleet"`
	Tripwires  tripwire.Config  `mapstructure:"tripwires"`
	Sources    sources.Config   `mapstructure:"sources"`
	Cards      card.Config      `mapstructure:"cards"`
	Bridges    bridge.Config    `mapstructure:"bridges"`
	Chat       ChatConfig       `mapstructure:"chat"`
}

// HomeserverConfig says where the homeserver is.
type HomeserverConfig struct {
	URL string `mapstructure:"url"`
}

// ChatConfig sets how Jarvis converses.
type ChatConfig struct {
	// ProposalTTL is how long a tripwire Jarvis proposes from a sentence
	// waits for the proposer's ✅ (or reply "arm").
	ProposalTTL time.Duration `mapstructure:"proposal_ttl"`
}

// Validate checks the chat section.
func (c ChatConfig) Validate() error {
	if c.ProposalTTL < time.Minute || c.ProposalTTL > 30*24*time.Hour {
		return core.Invalid("chat.proposal_ttl", "must be between 1m and 720h, got %s", c.ProposalTTL)
	}
	return nil
}

// LoggingConfig sets how Jarvis logs.
type LoggingConfig struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"`
}

// defaults are the values of every key the file may leave out; they match
// config.example.yaml. Every key is listed so that JARVIS_<SECTION>_<KEY>
// environment variables can override any of them.
var defaults = map[string]any{
	"homeserver.url":            "",
	"bot.user_id":               "",
	"bot.password":              "",
	"bot.access_token":          "",
	"bot.device_name":           "Jarvis",
	"bot.room":                  "",
	"bot.command_prefix":        "!",
	"bot.admins":                []string{},
	"bot.allowed_users":         []string{},
	"bot.encryption.enabled":    true,
	"bot.encryption.pickle_key": "",
	"store.type":                "sqlite3",
	"store.uri":                 "jarvis.db",
	"api.listen":                "",
	"api.agent_token":           "",
	"logging.level":             "info",
	"logging.format":            "auto",
	"workspace.id":              "default",
	"workspace.lease_ttl":       "30s",
	"breaker.half_open_timeout": "0s",
	"breaker.open_on": []map[string]string{
		{"urgency": "critical", "severity": "any"},
		{"urgency": "high", "severity": "safety"},
	},
	// The priority budget, core.DefaultConfig(). Viper merges per key:
	// a file or env value replaces one field of one class and the rest
	// stay, and class keys arrive lower-cased (core accepts any case).
	"cards.budget.p0.count":  2,
	"cards.budget.p0.window": "24h",
	"cards.budget.p1.count":  10,
	"cards.budget.p1.window": "24h",
	"bridges.networks": []map[string]string{
		{"name": "telegram", "users": "@telegram_*"},
		{"name": "whatsapp", "users": "@whatsapp_*"},
		{"name": "signal", "users": "@signal_*"},
		{"name": "discord", "users": "@discord_*"},
	},
	"bridges.relay_bots":                 []string{},
	"fleet.agents":                       []map[string]string{},
	"tripwires.tick":                     "5m",
	"tripwires.quarantine.flap_cycles":   6,
	"tripwires.quarantine.flap_window":   "1h",
	"tripwires.quarantine.source_errors": 12,
	"sources.snapshot.url":               "",
	"sources.snapshot.token":             "",
	"sources.snapshot.timeout":           "10s",
	"sources.snapshot.max_bytes":         1 << 20,
	"sources.url_fetch.enabled":          false,
	"sources.url_fetch.allowed_hosts":    []string{},
	"sources.url_fetch.timeout":          "10s",
	"sources.url_fetch.max_bytes":        256 << 10,
	"sources.rss.enabled":                false,
	"sources.rss.allowed_hosts":          []string{},
	"sources.rss.timeout":                "10s",
	"sources.rss.max_bytes":              1 << 20,
	"chat.proposal_ttl":                  "24h",
}

// LoadConfig reads the file (if path is not empty), applies environment
// overrides and defaults, and validates the result.
func LoadConfig(path string) (*Config, error) {
	v := viper.New()
	for key, value := range defaults {
		v.SetDefault(key, value)
	}
	v.SetEnvPrefix("JARVIS")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("config file: %w", err)
		}
		defer f.Close()
		v.SetConfigType("yaml")
		if err := v.ReadConfig(f); err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	// Lists of structs have no per-key default: start from the default value.
	cfg := Config{Sources: sources.DefaultConfig()}
	err := v.Unmarshal(&cfg, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
	})
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &cfg, nil
}

// Validate checks every section.
func (c *Config) Validate() error {
	if !strings.HasPrefix(c.Homeserver.URL, "http://") && !strings.HasPrefix(c.Homeserver.URL, "https://") {
		return core.Invalid("homeserver.url", "must be an http(s) URL, got %q", c.Homeserver.URL)
	}
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
	for _, section := range []interface{ Validate() error }{c.Bot, c.Store, c.API, c.Workspace, c.Breaker, c.Fleet, c.Cards, c.Tripwires, c.Sources, c.Bridges, c.Chat} {
		if err := section.Validate(); err != nil {
			return err
		}
	}
	return nil
}
