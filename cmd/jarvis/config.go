package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/jarvis-hmi/jarvis"
	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
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
	"github.com/jarvis-hmi/jarvis/sources"
	"github.com/jarvis-hmi/jarvis/store"
)

// Config is the whole configuration file. Each package owns the struct of
// its own section; this one only gathers them. A key of the file is the
// name of its field in snake_case (UserID is user_id, URLFetch is
// url_fetch): see snakeCase.
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

// LoadConfig reads the file (if path is not empty) over the defaults,
// applies environment overrides and validates the result. The defaults
// are config.example.yaml, embedded; every key in it is also registered,
// so that JARVIS_<SECTION>_<KEY> overrides any of them.
func LoadConfig(path string) (*Config, error) {
	defaults, err := defaultsOf(jarvis.ExampleConfig)
	if err != nil {
		return nil, fmt.Errorf("the built-in config.example.yaml: %w", err)
	}
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
	if v.IsSet("api.agent_token") {
		return nil, fmt.Errorf("config: %w", errSharedAgentToken)
	}
	var cfg Config
	err = v.Unmarshal(&cfg, func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.MapFieldName = snakeCase
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(
			objectsFromYAML, mapstructure.StringToTimeDurationHookFunc(), listFromCommas)
	})
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &cfg, nil
}

// errSharedAgentToken refuses a configuration that still sets the one
// shared agent token of earlier versions.
var errSharedAgentToken = core.Invalid("api.agent_token",
	"is gone: every agent and role now has its own token. Remove api.agent_token, then issue tokens with "+
		"`jarvis token issue --config FILE --role agent --agent NAME` (one per agent), `--role supervisor` and "+
		"`--role orchestrator`, and give each agent its own (see \"Upgrading a workspace\" in the README)")

// exampleMark, as the line comment of a key or its value in
// config.example.yaml, says the value only shows what to write: the key
// has no default.
const exampleMark = "# example"

// defaultsOf reads the example configuration as defaults, keyed by dotted
// path: a mapping is a section whose keys are defaults each, anything else
// (a value, a list) is one default. A value marked exampleMark counts as
// empty.
func defaultsOf(example []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(example, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a mapping of sections")
	}
	defaults := map[string]any{}
	return defaults, addDefaults(defaults, "", doc.Content[0])
}

// addDefaults adds the keys of mapping m, under prefix, to defaults.
func addDefaults(defaults map[string]any, prefix string, m *yaml.Node) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + strings.ToLower(k.Value)
		switch {
		case v.Kind == yaml.MappingNode:
			if err := addDefaults(defaults, key+".", v); err != nil {
				return err
			}
		case strings.HasPrefix(k.LineComment, exampleMark) || strings.HasPrefix(v.LineComment, exampleMark):
			if v.Kind == yaml.SequenceNode {
				defaults[key] = []any{}
			} else {
				defaults[key] = ""
			}
		default:
			var value any
			if err := v.Decode(&value); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			defaults[key] = value
		}
	}
	return nil
}

// snakeCase gives the key of a config struct's field: its name in
// snake_case, an acronym as one word (UserID is user_id, URLFetch is
// url_fetch, ProposalTTL is proposal_ttl). Errors name the field by it too.
func snakeCase(name string) string {
	runes := []rune(name)
	var b strings.Builder
	for i, r := range runes {
		if i > 0 && unicode.IsUpper(r) && (unicode.IsLower(runes[i-1]) || i+1 < len(runes) && unicode.IsLower(runes[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// objectsFromYAML reads a list of objects given as one string, as the
// environment gives it, in YAML flow style:
// JARVIS_FLEET_AGENTS='[{name: EVE, cadence: 24h}]'.
func objectsFromYAML(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice {
		return data, nil
	}
	if elem := to.Elem().Kind(); elem != reflect.Struct && elem != reflect.Map {
		return data, nil
	}
	var list []any
	if err := yaml.Unmarshal([]byte(data.(string)), &list); err != nil {
		return nil, fmt.Errorf("want a list in YAML flow style, e.g. [{name: x}, {name: y}]: %w", err)
	}
	return list, nil
}

// listFromCommas reads a list of values given as one string, as the
// environment gives it, separated by commas: JARVIS_BOT_ADMINS=@a:x,@b:x.
func listFromCommas(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice {
		return data, nil
	}
	if data.(string) == "" {
		return []string{}, nil
	}
	return strings.Split(data.(string), ","), nil
}

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
	sections := []interface{ Validate() error }{c.Store, c.API, c.Workspace.Lease(), c.Workspace.Away(), c.Breaker, c.Fleet, c.Cards, c.Approvals, c.Oncall, c.Tripwires, c.Sources, c.Bridges, c.Chat, c.Retention, c.History}
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
	return nil
}
