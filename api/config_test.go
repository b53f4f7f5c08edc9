package api_test

import (
	"strings"
	"testing"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/config"
)

// exampleAPIConfig is the api section of config.example.yaml: the
// timeouts, caps and rate limits Jarvis runs with unless told otherwise
// (listen and the token left empty).
func exampleAPIConfig(t testing.TB) api.Config {
	t.Helper()
	var doc struct {
		API map[string]any `yaml:"api"`
	}
	if err := yaml.Unmarshal(config.Example, &doc); err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	var cfg api.Config
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result: &cfg, ErrorUnused: true, DecodeHook: mapstructure.StringToTimeDurationHookFunc(),
		// A key is its field's name in snake_case.
		MatchName: func(key, field string) bool { return strings.EqualFold(strings.ReplaceAll(key, "_", ""), field) },
	})
	if err == nil {
		err = dec.Decode(doc.API)
	}
	if err != nil {
		t.Fatalf("the api section of config.example.yaml: %v", err)
	}
	return cfg
}

// TestExampleAPIConfig: the defaults set every limit, and validate once
// the API is on.
func TestExampleAPIConfig(t *testing.T) {
	cfg := exampleAPIConfig(t)
	if cfg.ReadTimeout <= 0 || cfg.WriteTimeout <= 0 || cfg.IdleTimeout <= 0 || cfg.MaxHeaderBytes <= 0 || cfg.MaxConnections <= 0 ||
		cfg.RateLimit.Credential.PerSecond <= 0 || cfg.RateLimit.Address.Burst <= 0 {
		t.Errorf("the example leaves a limit unset: %+v", cfg)
	}
	cfg.Listen = "127.0.0.1:0"
	if err := cfg.Validate(); err != nil {
		t.Errorf("the example's api section does not validate: %v", err)
	}
}
