// Package model is Jarvis's language model: an adapter on an
// OpenAI-compatible chat-completions API (Ollama, llama.cpp's server,
// vLLM, hosted providers) that turns a conversation into a reply and
// proposals through the tools the chat path gives it. It never acts: the
// tools draft what a person confirms with ✅.
package model

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Config is the model section. An empty BaseURL means no model: Jarvis
// answers with its grammar alone.
type Config struct {
	// BaseURL is the API's base, e.g. http://127.0.0.1:11434/v1 for Ollama.
	BaseURL string
	// Name is the model asked, e.g. "qwen2.5:7b" or "gpt-4o-mini".
	Name string
	// APIKeyFile is a file holding the API key; APIKeyEnv the name of an
	// environment variable holding it. The key itself is never in the
	// configuration, never logged and never in a prompt.
	APIKeyFile string
	APIKeyEnv  string
	// Timeout bounds a whole turn, every round of tool calls included:
	// past it the grammar answers.
	Timeout time.Duration
	// MaxRounds bounds the rounds of tool calls in one turn.
	MaxRounds int
	// MaxReplyTokens bounds one completion's reply.
	MaxReplyTokens int64
	Budget         BudgetConfig
	// Prices price each model's tokens.
	Prices  []Price
	Persona PersonaConfig
}

// BudgetConfig is the daily token budgets (UTC days); zero sets none.
type BudgetConfig struct {
	// WorkspaceTokens bounds the tokens Jarvis's model uses in a day for
	// everyone together.
	WorkspaceTokens int64
	// PersonTokens bounds the tokens one person's turns use in a day.
	PersonTokens int64
}

// Price is what one model's tokens cost, per million, in Currency.
type Price struct {
	Model    string
	Input    float64
	Output   float64
	Currency string
}

// PersonaConfig names the persona's profile file and its local override.
type PersonaConfig struct {
	// Profile is the workspace's persona file; empty: the built-in one.
	Profile string
	// Override is a local file whose fields win over the profile's;
	// empty: none.
	Override string
}

// Enabled reports whether a model is configured.
func (c Config) Enabled() bool { return c.BaseURL != "" }

var (
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)
)

// Validate checks the model section; with no base URL only that the rest
// is well formed.
func (c Config) Validate() error {
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return core.Invalid("model.base_url", "must be an http or https URL, not %q", c.BaseURL)
		}
		if u.User != nil {
			return core.Invalid("model.base_url", "must not carry credentials: give the key with model.api_key_file or model.api_key_env")
		}
		if strings.TrimSpace(c.Name) == "" {
			return core.Invalid("model.name", "must name the model to ask, e.g. qwen2.5:7b")
		}
	}
	if c.APIKeyFile != "" && c.APIKeyEnv != "" {
		return core.Invalid("model.api_key_env", "give the key one way: model.api_key_file or model.api_key_env, not both")
	}
	if c.APIKeyEnv != "" && !envName.MatchString(c.APIKeyEnv) {
		return core.Invalid("model.api_key_env", "must name an environment variable (the key itself never goes in the configuration), not %q", c.APIKeyEnv)
	}
	switch {
	case c.Timeout < 100*time.Millisecond || c.Timeout > 10*time.Minute:
		return core.Invalid("model.timeout", "must be between 100ms and 10m, got %s", c.Timeout)
	case c.MaxRounds < 1 || c.MaxRounds > 20:
		return core.Invalid("model.max_rounds", "must be between 1 and 20, got %d", c.MaxRounds)
	case c.MaxReplyTokens < 16 || c.MaxReplyTokens > 1<<20:
		return core.Invalid("model.max_reply_tokens", "must be between 16 and 1048576, got %d", c.MaxReplyTokens)
	case c.Budget.WorkspaceTokens < 0:
		return core.Invalid("model.budget.workspace_tokens", "must not be negative, got %d", c.Budget.WorkspaceTokens)
	case c.Budget.PersonTokens < 0:
		return core.Invalid("model.budget.person_tokens", "must not be negative, got %d", c.Budget.PersonTokens)
	}
	for i, p := range c.Prices {
		key := fmt.Sprintf("model.prices[%d]", i)
		switch {
		case strings.TrimSpace(p.Model) == "":
			return core.Invalid(key+".model", "must name a model")
		case p.Input < 0 || p.Output < 0:
			return core.Invalid(key, "prices must not be negative")
		case !currencyCode.MatchString(p.Currency):
			return core.Invalid(key+".currency", "must be an ISO 4217 code such as USD, not %q", p.Currency)
		}
	}
	return nil
}

// APIKey reads the key from its file or environment variable; "" when
// neither is set (a local server needs none).
func (c Config) APIKey() (string, error) {
	switch {
	case c.APIKeyFile != "":
		b, err := os.ReadFile(c.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("read model.api_key_file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	case c.APIKeyEnv != "":
		key, ok := os.LookupEnv(c.APIKeyEnv)
		if !ok || strings.TrimSpace(key) == "" {
			return "", fmt.Errorf("model.api_key_env names %s, which is not set", c.APIKeyEnv)
		}
		return strings.TrimSpace(key), nil
	}
	return "", nil
}

// price is the price of a model's tokens, zero when the table has none.
func (c Config) price(model string) Price {
	for _, p := range c.Prices {
		if strings.EqualFold(p.Model, model) {
			return p
		}
	}
	return Price{Model: model}
}
