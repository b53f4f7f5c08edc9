// Package jarvis holds what belongs to the whole program rather than to one
// of its packages: the example configuration, which is also the defaults.
package jarvis

import _ "embed"

// ExampleConfig is config.example.yaml: every key, each with a comment
// above it, and its default value. A value whose line is marked
// "# example" only shows what to write there: that key has no default.
//
//go:embed config.example.yaml
var ExampleConfig []byte
