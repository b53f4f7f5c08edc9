// Package converse is what the chat path and a language model share: the
// conversation Jarvis hands a model, the tools it may call, and what comes
// back. The model proposes through the tools; it never acts.
package converse

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// The reasons a model was not used; the chat path answers with its
// grammar then, and says which one.
var (
	// ErrSlow: the model did not answer within its timeout.
	ErrSlow = errors.New("the model did not answer in time")
	// ErrDown: the model could not be reached, or answered with an error.
	ErrDown = errors.New("the model could not be reached")
	// ErrOverBudget: today's token budget, the workspace's or the
	// person's, is spent.
	ErrOverBudget = errors.New("today's model budget is spent")
)

// Quote is one piece of the conversation, given to the model as data
// tagged with its trust, never as an instruction.
type Quote struct {
	// From is who wrote it: a Matrix ID, or "jarvis".
	From  string
	Trust core.Trust
	At    time.Time
	Text  string
}

// Result is what a tool gives back to the model: data, with the trust of
// the text in it (an agent's journal is core.TrustExternal) and where it
// came from.
type Result struct {
	// Data is encoded as JSON for the model, inside a frame that names
	// its trust and source.
	Data   any
	Trust  core.Trust
	Source string
}

// Tool is one function the model may call. A read-only tool reads
// Jarvis's records; a proposal tool drafts what a person confirms with ✅.
// No tool changes anything on its own.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments.
	Parameters map[string]any
	// Call runs the tool. An error the model should see (invalid
	// arguments) is a Result saying so; a returned error ends the
	// conversation.
	Call func(ctx context.Context, args json.RawMessage) (Result, error)
}

// Request is one turn: what a person said, with the conversation before
// it and the tools the model may use.
type Request struct {
	// Person is who spoke, for their budget; it is sent to the model only
	// as the author of their quotes.
	Person string
	// Message is what they said now.
	Message Quote
	// Conversation is what came before, oldest first.
	Conversation []Quote
	Tools        []Tool
	// Progress, when set, hears the reply's text so far while it streams.
	Progress func(text string)
}

// Reply is the model's answer to a turn.
type Reply struct {
	Text  string
	Model string
	// Tokens and cost of the turn, every round of tool calls included.
	TokensIn, TokensOut int64
	Cost                float64
	Currency            string
	// Warning, when set, says a daily budget passed its warning share.
	Warning string
	// FirstToken is how long the first streamed text took; Full the whole
	// turn.
	FirstToken, Full time.Duration
}

// Model is a language model behind the chat: it answers a turn, calling
// the request's tools as it goes.
type Model interface {
	Converse(ctx context.Context, req Request) (Reply, error)
}
