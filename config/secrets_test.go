package config

import (
	"os"
	"strings"
	"testing"
)

// TestGenerateSecrets: `pickle_key: generate` becomes a fresh random key
// in the file, once, the rest of the file (its comments too) unchanged;
// two files get different keys.
func TestGenerateSecrets(t *testing.T) {
	text := strings.Replace(minimalConfig, "{pickle_key: a-test-pickle-key-of-32-characters}",
		"\n    # Never change it.\n    pickle_key: generate # example\n    enabled: true", 1)
	path := writeConfig(t, text)
	written, err := GenerateSecrets(path)
	if err != nil || len(written) != 1 || written[0] != "bot.encryption.pickle_key" {
		t.Fatalf("GenerateSecrets = %v, %v, want bot.encryption.pickle_key written", written, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, after := strings.Split(text, "\n"), strings.Split(string(data), "\n")
	if len(before) != len(after) {
		t.Fatalf("the file went from %d lines to %d:\n%s", len(before), len(after), data)
	}
	for i := range before {
		if before[i] != after[i] && !strings.HasPrefix(after[i], `    pickle_key: "`) {
			t.Errorf("line %d: %q became %q", i+1, before[i], after[i])
		}
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode is %o, want 0600 kept", info.Mode().Perm())
	}
	cfg := loadConfig(t, string(data), "")
	if key := cfg.Bot.Encryption.PickleKey; len(key) != 43 || key == "generate" {
		t.Errorf("pickle key %q, want 43 random characters", key)
	}
	if written, err := GenerateSecrets(path); err != nil || written != nil {
		t.Errorf("GenerateSecrets again = %v, %v, want nothing written", written, err)
	}
	if other := loadConfig(t, string(mustGenerate(t, text)), ""); other.Bot.Encryption.PickleKey == cfg.Bot.Encryption.PickleKey {
		t.Error("two files got the same key")
	}
}

func mustGenerate(t *testing.T, text string) []byte {
	t.Helper()
	path := writeConfig(t, text)
	if _, err := GenerateSecrets(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGenerateFromEnvironmentRefused: `generate` from the environment
// cannot be written back, and the error names the variable.
func TestGenerateFromEnvironmentRefused(t *testing.T) {
	t.Setenv("JARVIS_BOT_ENCRYPTION_PICKLE_KEY", "generate")
	path := writeConfig(t, minimalConfig)
	_, err := GenerateSecrets(path)
	if err == nil || !strings.HasPrefix(err.Error(), "JARVIS_BOT_ENCRYPTION_PICKLE_KEY: bot.encryption.pickle_key: is \"generate\"") {
		t.Errorf("GenerateSecrets = %v, want a refusal naming JARVIS_BOT_ENCRYPTION_PICKLE_KEY", err)
	}
}
