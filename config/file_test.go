package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
)

// TestExamplePlaceholdersRefused: the example as it is, copied by a new
// operator, is refused at once, naming every key still at its
// placeholder with its line; `generate` is no placeholder.
func TestExamplePlaceholdersRefused(t *testing.T) {
	_, err := Load("config.example.yaml")
	if err == nil {
		t.Fatal("the example loads as it is, want its placeholders refused")
	}
	var want []string
	for _, key := range []string{"homeserver.url", "bot.user_id", "bot.password", "bot.room", "bot.admins", "bot.allowed_users"} {
		_, line := mustReadFile(t, "config.example.yaml").lookup(key)
		want = append(want, fmt.Sprintf("config.example.yaml:%d: %s: is still the example's value", line, key))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error:\n%v\nwant a line with %q", err, w)
		}
	}
	if got := strings.Count(err.Error(), "is still the example's value"); got != len(want) {
		t.Errorf("%d placeholders refused, want the %d above:\n%v", got, len(want), err)
	}
}

func mustReadFile(t *testing.T, path string) *file {
	t.Helper()
	f, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestErrorsSayWhere: an error in the configuration names the key and the
// file's line, or the environment variable its value came from; an
// unknown key suggests the closest known one.
func TestErrorsSayWhere(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"YAML that does not parse", "bot:\n  user_id: [\n", nil, "config file CONFIG: yaml: line 2: did not find expected node content"},
		{"a typo in a key", minimalConfig + "  usr_id: typo\n", nil, "CONFIG:10: bot.usr_id is no key; did you mean bot.user_id?"},
		{"a typo in a section", minimalConfig + "retnetion:\n  outbox: 1h\n", nil, "CONFIG:10: retnetion is no key; did you mean retention?"},
		{"a key like none", minimalConfig + "  colour: blue\n", nil, "CONFIG:10: bot.colour is no key"},
		{"a typo in a list's object", minimalConfig + "fleet:\n  agents: [{name: EVE, cadense: 1h}]\n", nil,
			"CONFIG:11: fleet.agents[0].cadense is no key; did you mean fleet.agents[0].cadence?"},
		{"a wrong value", minimalConfig + "logging:\n  level: loud\n", nil, `CONFIG:11: logging.level: must be trace`},
		{"a wrong value in a list", minimalConfig + "bridges:\n  relay_bots:\n    - ok\n", nil, "CONFIG:12: bridges.relay_bots[0]:"},
		{"a wrong value from the environment", minimalConfig, map[string]string{"JARVIS_LOGGING_LEVEL": "loud"},
			"JARVIS_LOGGING_LEVEL: logging.level: must be trace"},
		{"a placeholder from the environment", minimalConfig, map[string]string{"JARVIS_BOT_PASSWORD": "change-me"},
			"JARVIS_BOT_PASSWORD: bot.password: is still the example's value (change-me)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			path := writeConfig(t, tt.file)
			_, err := Load(path)
			want := strings.ReplaceAll(tt.want, "CONFIG", path)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Load = %v, want an error with %q", err, want)
			}
		})
	}
}

// TestBotSectionUnreadWithoutHomeserver: a workspace with no homeserver
// (the console alone) is not refused for the bot section's placeholders,
// which nothing reads.
func TestBotSectionUnreadWithoutHomeserver(t *testing.T) {
	cfg := loadConfig(t, "homeserver:\n  url: \"\"\nbot:\n  password: change-me\n", "")
	if cfg.Homeserver.URL != "" {
		t.Errorf("homeserver.url = %q, want empty", cfg.Homeserver.URL)
	}
	if _, err := Load(writeConfig(t, "homeserver:\n  url: https://matrix.example.org\n")); !errors.Is(err, core.ErrInvalid) ||
		!strings.Contains(err.Error(), "homeserver.url: is still the example's value") {
		t.Errorf("the example's homeserver: %v, want it refused", err)
	}
}

// TestUnknownEnvironment: a JARVIS_ variable that sets no key is named,
// with the closest one when it is a typo; one that sets a key is not.
func TestUnknownEnvironment(t *testing.T) {
	t.Setenv("JARVIS_BOT_PASWORD", "x")
	t.Setenv("JARVIS_NOTHING_LIKE_IT", "x")
	t.Setenv("JARVIS_BOT_PASSWORD", "x")
	got := UnknownEnvironment()
	if near, ok := got["JARVIS_BOT_PASWORD"]; !ok || near != "JARVIS_BOT_PASSWORD" {
		t.Errorf("JARVIS_BOT_PASWORD: %q, %v; want it named, near JARVIS_BOT_PASSWORD", near, ok)
	}
	if near, ok := got["JARVIS_NOTHING_LIKE_IT"]; !ok || near != "" {
		t.Errorf("JARVIS_NOTHING_LIKE_IT: %q, %v; want it named, near nothing", near, ok)
	}
	if _, ok := got["JARVIS_BOT_PASSWORD"]; ok {
		t.Error("JARVIS_BOT_PASSWORD sets bot.password, and is named")
	}
}
