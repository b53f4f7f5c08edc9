package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/config/settings"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/retention"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
)

const minimalConfig = `
homeserver:
  url: http://127.0.0.1:8008
bot:
  user_id: "@jarvis:jarvis.test"
  password: secret-password
  room: "#jarvis:jarvis.test"
  allowed_users: ["@*:jarvis.test"]
  encryption: {pickle_key: a-test-pickle-key-of-32-characters}
`

// loadConfig loads text as a config file. With errKey set, loading must
// fail naming that key, and it returns nil.
func loadConfig(t *testing.T, text, errKey string) *Config {
	t.Helper()
	cfg, err := Load(writeConfig(t, text))
	if errKey != "" {
		var fe *core.FieldError
		if !errors.As(err, &fe) || fe.Field != errKey {
			t.Fatalf("Load = %v, want an error naming %s", err, errKey)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := Load(writeConfig(t, minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"bot.command_prefix", cfg.Bot.CommandPrefix, "!"},
		{"bot.device_name", cfg.Bot.DeviceName, "Jarvis"},
		{"store.type", cfg.Store.Type, "sqlite3"},
		{"store.uri", cfg.Store.URI, "jarvis.db"},
		{"store.max_open_conns", strconv.Itoa(cfg.Store.MaxOpenConns), "16"},
		{"store.max_idle_conns", strconv.Itoa(cfg.Store.MaxIdleConns), "0"},
		{"store.conn_max_lifetime", cfg.Store.ConnMaxLifetime.String(), "30m0s"},
		{"store.idle_in_transaction_timeout", cfg.Store.IdleInTransactionTimeout.String(), "30s"},
		{"store.tcp_keepalive", cfg.Store.TCPKeepalive.String(), "15s"},
		{"logging.level", cfg.Logging.Level, "info"},
		{"logging.format", cfg.Logging.Format, "auto"},
		{"workspace.id", cfg.Workspace.ID, "default"},
		{"api.listen", cfg.API.Listen, ""},
		{"api limits", fmt.Sprint(cfg.API.ReadTimeout, cfg.API.WriteTimeout, cfg.API.IdleTimeout, cfg.API.MaxHeaderBytes, cfg.API.MaxConnections),
			"10s 30s 1m0s 16384 512"},
		{"api.rate_limit", fmt.Sprint(cfg.API.RateLimit), "{{10 100} {20 40}}"},
		{"workspace.lease_ttl", cfg.Workspace.LeaseTTL.String(), "30s"},
		{"breaker", fmt.Sprint(cfg.Breaker), fmt.Sprint(breaker.Config{OpenOn: []breaker.Trigger{
			{Urgency: breaker.UrgencyCritical, Severity: breaker.SeverityAny}, {Urgency: breaker.UrgencyHigh, Severity: breaker.SeveritySafety}}})},
		{"tripwires", fmt.Sprint(cfg.Tripwires), fmt.Sprint(tripwire.Config{Tick: 5 * time.Minute,
			Quarantine: tripwire.QuarantineConfig{FlapCycles: 6, FlapWindow: time.Hour, SourceErrors: 12}, MaxPerPerson: 100,
			Backtest:    tripwire.BacktestConfig{MaxReadings: 5000, Concurrent: 4, ConcurrentPerPerson: 1},
			FetchBudget: tripwire.FetchBudget{Time: 15 * time.Second, Workers: 2}, SkipLog: tripwire.SkipLogConfig{PerTripwire: 500}})},
		{"bridges.networks", fmt.Sprint(cfg.Bridges.Networks), fmt.Sprint([]bridge.Network{
			{Name: "telegram", Users: "@telegram_*"}, {Name: "whatsapp", Users: "@whatsapp_*"},
			{Name: "signal", Users: "@signal_*"}, {Name: "discord", Users: "@discord_*"}})},
		{"sources.snapshot.kinds", fmt.Sprint(len(cfg.Sources.Snapshot.Kinds)), "3"},
		{"sources.url_fetch.max_bytes", fmt.Sprint(cfg.Sources.URLFetch.MaxBytes), "262144"},
		{"sources.max_value_bytes", fmt.Sprint(cfg.Sources.MaxValueBytes), "512"},
		{"retention", fmt.Sprint(cfg.Retention), fmt.Sprint(retention.Config{Outbox: 720 * time.Hour, Events: 720 * time.Hour,
			Pending: 168 * time.Hour, Journal: 2160 * time.Hour, Approvals: 720 * time.Hour, Deleted: 720 * time.Hour,
			Heartbeats: 2160 * time.Hour, Incidents: 2160 * time.Hour, Reminders: 720 * time.Hour, ConsumedEvents: 720 * time.Hour, Attestations: 2160 * time.Hour})},
		{"approvals.remind_after", cfg.Approvals.RemindAfter.String(), "15m0s"},
		{"approvals.approvers", fmt.Sprint(cfg.Approvals.Approvers), "[]"},
		{"approvals.deadline_may_approve", fmt.Sprint(cfg.Approvals.DeadlineMayApprove), "false"},
		{"approvals.min_approve_deadline", cfg.Approvals.MinApproveDeadline.String(), "1h0m0s"},
		{"approvals.max_open", fmt.Sprint(cfg.Approvals.MaxOpen), "10"},
		{"approvals.rate", fmt.Sprint(cfg.Approvals.Rate), "{30 1h0m0s}"},
		{"oncall.escalate_after", cfg.Oncall.EscalateAfter.String(), "15m0s"},
		{"oncall.escalation", fmt.Sprint(cfg.Oncall.Escalation), "[]"},
		{"oncall.remind_every", cfg.Oncall.RemindEvery.String(), "1h0m0s"},
		{"workspace.away_after", cfg.Workspace.AwayAfter.String(), "10m0s"},
		{"fleet.crash_loop", fmt.Sprint(cfg.Fleet.CrashLoop), "{3 15m0s}"},
		{"fleet.orchestrator", cfg.Fleet.Orchestrator, ""},
		{"fleet.group_window", cfg.Fleet.GroupWindow.String(), "30s"},
		// A fleet.Config built in code without a journal section gets
		// fleet.DefaultJournal: the same.
		{"fleet.journal", fmt.Sprint(cfg.Fleet.Journal), fmt.Sprint(fleet.DefaultJournal)},
		// Values marked "# example" in config.example.yaml are no defaults.
		{"bot.admins", fmt.Sprint(cfg.Bot.Admins), "[]"},
		{"bot.access_token", cfg.Bot.AccessToken, ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

// writePlaceholders sets, from the environment, each key the example holds
// a placeholder for, as an operator who copied it writes their own.
func writePlaceholders(t *testing.T) {
	t.Helper()
	for key, value := range map[string]string{
		"HOMESERVER_URL": "https://matrix.jarvis.test", "BOT_USER_ID": "@jarvis:jarvis.test", "BOT_PASSWORD": "a-password",
		"BOT_ROOM": "#jarvis:jarvis.test", "BOT_ADMINS": "@alice:jarvis.test", "BOT_ALLOWED_USERS": "@*:jarvis.test",
	} {
		t.Setenv("JARVIS_"+key, value)
	}
}

func TestExampleConfigLoads(t *testing.T) {
	writePlaceholders(t)
	cfg, err := Load("config.example.yaml")
	if err != nil {
		t.Fatalf("config.example.yaml does not load: %v", err)
	}
	defaults, err := Load(writeConfig(t, minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Bot.CommandPrefix != defaults.Bot.CommandPrefix || cfg.Logging.Level != defaults.Logging.Level {
		t.Errorf("the example's values differ from the defaults")
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	t.Setenv("JARVIS_BOT_COMMAND_PREFIX", "?")
	t.Setenv("JARVIS_API_LISTEN", "127.0.0.1:9000")
	t.Setenv("JARVIS_BOT_ADMINS", "@a:example.org,@b:example.org")
	t.Setenv("JARVIS_API_RATE_LIMIT_ADDRESS_PER_SECOND", "2.5")
	cfg, err := Load(writeConfig(t, minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Bot.CommandPrefix != "?" || cfg.API.Listen != "127.0.0.1:9000" {
		t.Errorf("env overrides not applied: prefix %q listen %q", cfg.Bot.CommandPrefix, cfg.API.Listen)
	}
	if len(cfg.Bot.Admins) != 2 || cfg.Bot.Admins[1] != "@b:example.org" {
		t.Errorf("bot.admins from env = %q", cfg.Bot.Admins)
	}
	if got := cfg.API.RateLimit.Address; got.PerSecond != 2.5 || got.Burst != 40 {
		t.Errorf("api.rate_limit.address from env = %+v, want 2.5 a second and the default burst", got)
	}
}

// TestEnvironmentSetsListsOfObjects: a list of objects comes from the
// environment as one YAML flow list, and its items are checked as in a file.
func TestEnvironmentSetsListsOfObjects(t *testing.T) {
	tests := []struct {
		name, env, value string
		check            func(*Config) bool
		// errKey, when set, is what the error must name.
		errKey string
	}{
		{name: "fleet agents", env: "JARVIS_FLEET_AGENTS", value: "[{name: EVE, cadence: 12h}, {name: AUREA, posture: required, depends_on: [EVE]}]",
			check: func(c *Config) bool {
				return len(c.Fleet.Agents) == 2 && c.Fleet.Agents[0].Cadence == 12*time.Hour && c.Fleet.Agents[1].Posture == "required" &&
					slices.Equal(c.Fleet.Agents[1].DependsOn, []string{"EVE"})
			}},
		{name: "breaker triggers", env: "JARVIS_BREAKER_OPEN_ON", value: `[{urgency: low, severity: any}]`,
			check: func(c *Config) bool { return len(c.Breaker.OpenOn) == 1 && c.Breaker.OpenOn[0].Urgency == "low" }},
		{name: "JSON is YAML too", env: "JARVIS_BRIDGES_NETWORKS", value: `[{"name": "slack", "users": "@slack_*"}]`,
			check: func(c *Config) bool { return len(c.Bridges.Networks) == 1 && c.Bridges.Networks[0].Name == "slack" }},
		{name: "no items", env: "JARVIS_SOURCES_SNAPSHOT_KINDS", value: "[]",
			check: func(c *Config) bool { return len(c.Sources.Snapshot.Kinds) == 0 }},
		{name: "an item is checked", env: "JARVIS_FLEET_AGENTS", value: "[{name: EVE, cadence: 500ms}]", errKey: "fleet.agents[0].cadence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			cfg := loadConfig(t, minimalConfig, tt.errKey)
			if cfg == nil {
				return
			}
			if !tt.check(cfg) {
				t.Errorf("%s=%s not applied: %+v", tt.env, tt.value, cfg)
			}
		})
	}
	t.Run("not a list", func(t *testing.T) {
		t.Setenv("JARVIS_FLEET_AGENTS", "EVE,AUREA")
		if _, err := Load(writeConfig(t, minimalConfig)); err == nil || !strings.Contains(err.Error(), "fleet.agents") {
			t.Errorf("Load = %v, want an error naming fleet.agents", err)
		}
	})
}

// TestEveryFieldHasAKey: config.example.yaml, the defaults, names every
// field, so that every one can be set from the environment.
func TestEveryFieldHasAKey(t *testing.T) {
	defaults, err := settings.Defaults(Example)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			key := prefix + settings.Key(f.Name)
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(key+".", f.Type)
			case reflect.Map:
				found := false
				for k := range defaults {
					found = found || strings.HasPrefix(k, key+".")
				}
				if !found {
					t.Errorf("config.example.yaml has no %s", key)
				}
			default:
				if _, ok := defaults[key]; !ok {
					t.Errorf("config.example.yaml has no %s", key)
				}
			}
		}
	}
	walk("", reflect.TypeOf(Config{}))
}

func TestInvalidConfigNamesTheKey(t *testing.T) {
	const apiOn = "api:\n  listen: 127.0.0.1:9000\n"
	tests := []struct {
		name, change, key string
	}{
		{"bad homeserver", "homeserver:\n  url: matrix.example.org\n", "homeserver.url"},
		{"bad user", "bot:\n  user_id: jarvis\n", "bot.user_id"},
		{"bad room", "bot:\n  room: jarvis\n", "bot.room"},
		{"bad admin", "bot:\n  admins: [\"bob\"]\n", "bot.admins"},
		{"bad allowed pattern", "bot:\n  allowed_users: [\"*\"]\n", "bot.allowed_users"},
		{"no credentials", "bot:\n  password: \"\"\n", "bot.password"},
		{"encryption without pickle key", "bot:\n  encryption: {pickle_key: \"\"}\n", "bot.encryption.pickle_key"},
		{"prefix with space", "bot:\n  command_prefix: \"! \"\n", "bot.command_prefix"},
		{"unknown store", "store:\n  type: oracle\n", "store.type"},
		{"more idle connections than open", "store:\n  max_open_conns: 2\n  max_idle_conns: 3\n", "store.max_idle_conns"},
		{"negative connection lifetime", "store:\n  conn_max_lifetime: -1m\n", "store.conn_max_lifetime"},
		{"bad log level", "logging:\n  level: loud\n", "logging.level"},
		{"bad log format", "logging:\n  format: xml\n", "logging.format"},
		{"api with the shared agent token", "api:\n  listen: 127.0.0.1:9000\n  agent_token: a-long-enough-agent-token\n", "api.agent_token"},
		{"api with an empty shared agent token", "api:\n  agent_token: \"\"\n", "api.agent_token"},
		{"api bad listen", "api:\n  listen: nine\n", "api.listen"},
		{"api without read timeout", apiOn + "  read_timeout: 0s\n", "api.read_timeout"},
		{"api without connections", apiOn + "  max_connections: 0\n", "api.max_connections"},
		{"api tiny header limit", apiOn + "  max_header_bytes: 100\n", "api.max_header_bytes"},
		{"api without rate", apiOn + "  rate_limit: {credential: {per_second: 0}}\n", "api.rate_limit.credential.per_second"},
		{"api without burst", apiOn + "  rate_limit: {address: {burst: 0}}\n", "api.rate_limit.address.burst"},
		{"api short metrics token", apiOn + "  metrics_token: short\n", "api.metrics_token"},
		{"metrics on the API's address", apiOn + "  metrics_listen: 127.0.0.1:9000\n", "api.metrics_listen"},
		{"metrics without the API", "api:\n  metrics_listen: 127.0.0.1:9464\n", "api.metrics_listen"},
		{"lease too short", "workspace:\n  lease_ttl: 1s\n", "workspace.lease_ttl"},
		{"no workspace", "workspace:\n  id: \"\"\n", "workspace.id"},
		{"bad bridge pattern", "bridges:\n  networks: [{name: telegram, users: \"telegram\"}]\n", "bridges.networks[0].users"},
		{"bad relay bot", "bridges:\n  relay_bots: [\"relaybot\"]\n", "bridges.relay_bots[0]"},
		{"negative half-open timeout", "breaker:\n  half_open_timeout: -1s\n", "breaker.half_open_timeout"},
		{"outbox retention too short", "retention:\n  outbox: 30m\n", "retention.outbox"},
		{"handled events kept too briefly", "retention:\n  events: 12h\n", "retention.events"},
		{"pending retention zero", "retention:\n  pending: 0s\n", "retention.pending"},
		{"journal retention negative", "retention:\n  journal: -1h\n", "retention.journal"},
		{"deleted retention too short", "retention:\n  deleted: 59m\n", "retention.deleted"},
		{"approvals kept too briefly", "retention:\n  approvals: 30m\n", "retention.approvals"},
		{"heartbeats kept too briefly", "retention:\n  heartbeats: 30m\n", "retention.heartbeats"},
		{"incidents kept too briefly", "retention:\n  incidents: 0s\n", "retention.incidents"},
		{"reminders kept too briefly", "retention:\n  reminders: 59m\n", "retention.reminders"},
		{"consumed events kept too briefly", "retention:\n  consumed_events: 1m\n", "retention.consumed_events"},
		{"attestations kept too briefly", "retention:\n  attestations: 59m\n", "retention.attestations"},
		{"a crash loop of one restart", "fleet:\n  crash_loop: {restarts: 1, window: 15m}\n", "fleet.crash_loop.restarts"},
		{"a budget without its currency", "fleet:\n  agents: [{name: EVE, budget: {daily: 5}}]\n", "fleet.agents[0].budget.currency"},
		{"a dependency on no agent", "fleet:\n  agents: [{name: ZEUS}, {name: EVE}, {name: JADE, depends_on: [ZUES]}]\n", "fleet.agents[2].depends_on[0]"},
		{"an orchestrator that is no agent", "fleet:\n  orchestrator: MOS\n  agents: [{name: ZEUS}]\n", "fleet.orchestrator"},
		{"a negative group window", "fleet:\n  group_window: -1s\n", "fleet.group_window"},
		{"approvals named again too often", "approvals:\n  remind_after: 10s\n", "approvals.remind_after"},
		{"an approver that is no Matrix account", "approvals:\n  approvers: [alice]\n", "approvals.approvers[0]"},
		{"a deadline that approves at once", "approvals:\n  min_approve_deadline: 0s\n", "approvals.min_approve_deadline"},
		{"alerts escalated at once", "oncall:\n  escalate_after: 0s\n", "oncall.escalate_after"},
		{"an escalation tier that names nobody", "oncall:\n  escalation: [[\"@dave:x\"], dave]\n", "oncall.escalation[1]"},
		{"away_after zero", "workspace:\n  away_after: 0s\n", "workspace.away_after"},
		{"history kept for less than its full resolution", "history:\n  retention: 47h\n", "history.retention"},
		{"an unknown chart time zone", "history:\n  time_zone: Mars/Olympus\n", "history.time_zone"},
		{"a model without a name", "model:\n  base_url: http://127.0.0.1:11434/v1\n", "model.name"},
		{"a model URL carrying a key", "model:\n  base_url: https://me:sk-1@api.example.org/v1\n  name: m\n", "model.base_url"},
		{"a model key given twice", "model:\n  api_key_file: /k\n  api_key_env: KEY\n", "model.api_key_env"},
		{"a model key in the configuration", "model:\n  api_key_env: sk-abcdef-123\n", "model.api_key_env"},
		{"a model timeout of nothing", "model:\n  timeout: 0s\n", "model.timeout"},
		{"a price without its currency", "model:\n  prices: [{model: m, input: 1, output: 2}]\n", "model.prices[0].currency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, merge(minimalConfig, tt.change)))
			var fe *core.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.key {
				t.Errorf("Load = %v, want an error naming %s", err, tt.key)
			}
		})
	}
}

// TestModelConfig: a model's section loads, prices and all; the key
// itself has no key to be written in.
func TestModelConfig(t *testing.T) {
	cfg, err := Load(writeConfig(t, merge(minimalConfig, "model:\n  base_url: http://127.0.0.1:11434/v1\n  name: qwen2.5:7b\n"+
		"  prices: [{model: qwen2.5:7b, input: 0.1, output: 0.2, currency: EUR}]\n  budget: {person_tokens: 5000}\n")))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Model
	if !m.Enabled() || m.Name != "qwen2.5:7b" || len(m.Prices) != 1 || m.Prices[0].Currency != "EUR" || m.Budget.PersonTokens != 5000 ||
		m.Budget.WorkspaceTokens != 1000000 || m.Timeout != 20*time.Second {
		t.Errorf("model = %+v", m)
	}
	if Defaults().Model.Enabled() {
		t.Error("a model is on by default")
	}
	if _, err := Load(writeConfig(t, merge(minimalConfig, "model:\n  api_key: sk-secret\n"))); err == nil || !strings.Contains(err.Error(), "model.api_key is no key") {
		t.Errorf("an API key in the file: %v", err)
	}
}

// TestIdleTransactionsEndWithinTheLease: a standby's takeover waits for
// the lease row a holder's transaction keeps locked, so PostgreSQL ends a
// session left idle in a transaction no later than the lease would have
// run out; an idle timeout that is shorter, or the default one beside the
// default lease, stays.
func TestIdleTransactionsEndWithinTheLease(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"the defaults", "", "30s"},
		{"a short lease", "workspace:\n  lease_ttl: 3s\n", "3s"},
		{"off", "workspace:\n  lease_ttl: 10s\nstore:\n  idle_in_transaction_timeout: 0s\n", "10s"},
		{"shorter than the lease", "workspace:\n  lease_ttl: 10s\nstore:\n  idle_in_transaction_timeout: 2s\n", "2s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loadConfig(t, merge(minimalConfig, tt.yaml), "")
			if got := cfg.Store.IdleInTransactionTimeout.String(); got != tt.want {
				t.Errorf("store.idle_in_transaction_timeout = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestUnknownKeyIsAnError(t *testing.T) {
	_, err := Load(writeConfig(t, minimalConfig+"  usr_id: typo\n"))
	if err == nil || !strings.Contains(err.Error(), "usr_id") {
		t.Errorf("Load with a typo = %v, want an error naming usr_id", err)
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("Load(missing) = %v", err)
	}
}

// merge returns the minimal config with the keys of change (a YAML
// fragment of "section:\n  key: value" lines) replacing or adding to it.
func merge(base, change string) string {
	values := map[string]map[string]string{}
	var order []string
	for _, text := range []string{base, change} {
		section := ""
		for _, line := range strings.Split(text, "\n") {
			switch {
			case strings.TrimSpace(line) == "":
			case !strings.HasPrefix(line, " "):
				section = strings.TrimSuffix(line, ":")
				if values[section] == nil {
					values[section] = map[string]string{}
					order = append(order, section)
				}
			default:
				key, value, _ := strings.Cut(strings.TrimSpace(line), ":")
				values[section][key] = value
			}
		}
	}
	var b strings.Builder
	for _, section := range order {
		b.WriteString(section + ":\n")
		for key, value := range values[section] {
			b.WriteString("  " + key + ":" + value + "\n")
		}
	}
	return b.String()
}

// TestCardsBudgetConfig: the priority budget comes from the defaults, the
// file and the environment, merged one field of one class at a time.
func TestCardsBudgetConfig(t *testing.T) {
	day, week := 24*time.Hour, 7*24*time.Hour
	tests := []struct {
		name string
		file string
		env  map[string]string
		want map[card.Priority]card.BudgetRule
		// errKey, when set, is the key the error must name.
		errKey string
	}{
		{name: "defaults", want: map[card.Priority]card.BudgetRule{"P0": {Count: 2, Window: day}, "P1": {Count: 10, Window: day}}},
		{name: "a class added in the file keeps the default ones",
			file: "cards:\n  budget:\n    P2:\n      count: 50\n      window: 168h\n",
			want: map[card.Priority]card.BudgetRule{"P0": {Count: 2, Window: day}, "P1": {Count: 10, Window: day}, "P2": {Count: 50, Window: week}}},
		{name: "one field of a default class",
			file: "cards:\n  budget:\n    P0:\n      count: 1\n",
			want: map[card.Priority]card.BudgetRule{"P0": {Count: 1, Window: day}, "P1": {Count: 10, Window: day}}},
		{name: "lower-case class in the file",
			file: "cards:\n  budget:\n    p1: {count: 3, window: 1h}\n",
			want: map[card.Priority]card.BudgetRule{"P0": {Count: 2, Window: day}, "P1": {Count: 3, Window: time.Hour}}},
		{name: "the environment wins over the file",
			file: "cards:\n  budget:\n    P0:\n      count: 1\n",
			env:  map[string]string{"JARVIS_CARDS_BUDGET_P0_COUNT": "5", "JARVIS_CARDS_BUDGET_P1_WINDOW": "168h"},
			want: map[card.Priority]card.BudgetRule{"P0": {Count: 5, Window: day}, "P1": {Count: 10, Window: week}}},
		{name: "a new class without a window",
			file:   "cards:\n  budget:\n    P3:\n      count: 4\n",
			errKey: "cards.budget.p3.window"},
		{name: "a negative count",
			file:   "cards:\n  budget:\n    P1:\n      count: -1\n",
			errKey: "cards.budget.p1.count"},
		{name: "an unknown class",
			file:   "cards:\n  budget:\n    P9: {count: 1, window: 24h}\n",
			errKey: "cards.budget.p9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg := loadConfig(t, minimalConfig+tt.file, tt.errKey)
			if cfg == nil {
				return
			}
			if got := budgetOf(cfg.Cards); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("budget = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("the example says what the defaults say", func(t *testing.T) {
		writePlaceholders(t)
		cfg, err := Load("config.example.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := budgetOf(cfg.Cards), budgetOf(Defaults().Cards); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("example budget = %v, defaults %v", got, want)
		}
	})
}

// budgetOf keys a budget by class, whatever the case of its keys.
func budgetOf(c card.Config) map[card.Priority]card.BudgetRule {
	out := map[card.Priority]card.BudgetRule{}
	for k, r := range c.Budget {
		out[card.Priority(strings.ToUpper(k))] = r
	}
	return out
}

// TestSharedAgentTokenRefused: the one shared agent token of earlier
// versions, in the file or the environment, stops start-up with a message
// saying how to issue tokens instead.
func TestSharedAgentTokenRefused(t *testing.T) {
	t.Setenv("JARVIS_API_AGENT_TOKEN", "a-long-enough-agent-token")
	_, err := Load(writeConfig(t, minimalConfig))
	var fe *core.FieldError
	if !errors.As(err, &fe) || fe.Field != "api.agent_token" || !strings.Contains(err.Error(), "jarvis token issue") {
		t.Errorf("Load = %v, want api.agent_token refused, saying to use `jarvis token issue`", err)
	}
}

// TestConfigWithoutHomeserver: a workspace used from the console only has
// no homeserver and no bot account, and loads. (`jarvis run` refuses it:
// see the app's TestRunWithoutHomeserver.)
func TestConfigWithoutHomeserver(t *testing.T) {
	path := writeConfig(t, "homeserver:\n  url: \"\"\nstore:\n  uri: "+filepath.Join(t.TempDir(), "jarvis.db")+"\n")
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("a config with no homeserver: %v", err)
	}
	if cfg.Bot.CommandPrefix != "!" {
		t.Errorf("command prefix %q, want the default !", cfg.Bot.CommandPrefix)
	}
}

// TestDefaults: Defaults is what loading no file gives (with nothing in the
// environment), and the configurations tests run the core services with
// are those defaults.
func TestDefaults(t *testing.T) {
	loaded, err := Load("")
	if err != nil {
		t.Fatalf("the defaults alone do not load: %v", err)
	}
	defaults := Defaults()
	if !reflect.DeepEqual(loaded, defaults) {
		t.Errorf("Defaults() =\n%+v\nLoad(\"\") =\n%+v", defaults, loaded)
	}
	for _, tt := range []struct {
		name      string
		test, cfg any
	}{
		{"breaker", testconfig.Breaker(), defaults.Breaker},
		{"cards", testconfig.Cards(), defaults.Cards},
		{"tripwires", testconfig.Tripwires(), defaults.Tripwires},
		// What a processor built without a configuration (as in commands'
		// own tests) takes for zero.
		{"chat.snooze", commands.DefaultSnooze, defaults.Chat.Snooze},
		{"chat.proposal_ttl", commands.DefaultProposalTTL, defaults.Chat.ProposalTTL},
	} {
		if !reflect.DeepEqual(tt.test, tt.cfg) {
			t.Errorf("testconfig's %s = %+v, the defaults' %+v", tt.name, tt.test, tt.cfg)
		}
	}
}

// TestMuteTimingsAndAlertmanagerLoad: a mute timing written as the
// example's comment shows it, and Alertmanager's urgency table, load as
// written.
func TestMuteTimingsAndAlertmanagerLoad(t *testing.T) {
	cfg := loadConfig(t, minimalConfig+`oncall:
  mute_timings:
    - name: nightly-backup
      targets: [EVE, "alertname=BackupRunning"]
      weekdays: ["monday:friday"]
      times: [{start_time: "02:00", end_time: "04:00"}]
      location: Europe/Berlin
alertmanager:
  urgency: {critical: page, disaster: page}
`, "")
	m := cfg.Oncall.MuteTimings
	if len(m) != 1 || m[0].Name != "nightly-backup" || len(m[0].Targets) != 2 || m[0].Times[0].StartTime != "02:00" ||
		m[0].Times[0].EndTime != "04:00" || m[0].Location != "Europe/Berlin" || m[0].Weekdays[0] != "monday:friday" {
		t.Errorf("mute_timings = %+v", m)
	}
	if u := cfg.Alertmanager.Urgency; u["disaster"] != "page" || u["critical"] != "page" {
		t.Errorf("alertmanager.urgency = %v", u)
	}
	loadConfig(t, minimalConfig+"alertmanager:\n  urgency: {critical: wake-everyone}\n", "alertmanager.urgency")
	loadConfig(t, minimalConfig+"oncall:\n  mute_timings: [{name: x, targets: [EVE], times: [{start_time: \"25:00\", end_time: \"26:00\"}]}]\n",
		"oncall.mute_timings[0].times[0]")
}
