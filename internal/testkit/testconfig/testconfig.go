// Package testconfig holds the configurations tests run the core services
// with: the defaults config/config.example.yaml gives, read from it as
// config.Load reads them (config's TestDefaults checks that they are the
// same). They are not config.Defaults() itself because config imports
// commands, whose own tests use them: the file is read from the source tree.
package testconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/jarvis-hmi/jarvis/config/settings"
	"github.com/jarvis-hmi/jarvis/core/alertmanager"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// Tripwires is the tripwires section: how often the evaluator ticks, and
// when a tripwire is quarantined.
func Tripwires() tripwire.Config { return section[tripwire.Config]("tripwires") }

// Breaker is the breaker section: which observations open a breaker, and
// the half-open timeout.
func Breaker() breaker.Config { return section[breaker.Config]("breaker") }

// Cards is the cards section: the priority budget.
func Cards() card.Config { return section[card.Config]("cards") }

// Alertmanager is the alertmanager section: the receiver's bounds, links
// and urgencies.
func Alertmanager() alertmanager.Config { return section[alertmanager.Config]("alertmanager") }

// section decodes the section under key of the example configuration.
func section[T any](key string) T {
	var out T
	example, err := os.ReadFile(examplePath())
	var s *settings.Settings
	if err == nil {
		s, err = settings.FromExample(example)
	}
	if err == nil {
		err = s.Decode(key, &out)
	}
	if err != nil {
		panic(fmt.Sprintf("the %s section of config.example.yaml: %v", key, err))
	}
	return out
}

// examplePath is config/config.example.yaml in the source tree this file
// was compiled from.
func examplePath() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "config", "config.example.yaml")
}
