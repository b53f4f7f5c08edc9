package model

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/jarvis-hmi/jarvis/core"
)

// Persona is who Jarvis is when it converses: profile fields, not code.
type Persona struct {
	// Alias is the name it goes by.
	Alias string `yaml:"alias"`
	// Tone is how it speaks.
	Tone string `yaml:"tone"`
	// Language is the language it answers in.
	Language string `yaml:"language"`
	// Topics are what it may discuss; anything else it declines.
	Topics []string `yaml:"topics"`
	// From names the files the persona was read from, after the built-in
	// one.
	From []string `yaml:"-"`
}

// DefaultPersona is the persona with no profile file.
var DefaultPersona = Persona{
	Alias:    "Jarvis",
	Tone:     "brief, plain and friendly; no filler",
	Language: "English",
	Topics: []string{
		"the fleet of agents: their status, breakers, journals and approvals",
		"the backlog: cards and card sets",
		"the person's tripwires, reminders and tasks",
	},
}

// Limits of a persona file.
const (
	maxPersonaFile  = 64 << 10
	maxPersonaField = 500
	maxTopics       = 20
)

// LoadPersona reads the persona: the built-in one, then the workspace's
// profile over it, then the local override over that; a field a file sets
// wins over the layers below it.
func LoadPersona(cfg PersonaConfig) (Persona, error) {
	p := DefaultPersona
	p.Topics = append([]string(nil), p.Topics...)
	for _, layer := range []struct{ key, path string }{{"model.persona.profile", cfg.Profile}, {"model.persona.override", cfg.Override}} {
		if layer.path == "" {
			continue
		}
		over, err := readPersona(layer.path)
		if err != nil {
			return p, fmt.Errorf("%s: %w", layer.key, err)
		}
		p = p.merge(over)
		p.From = append(p.From, layer.path)
	}
	return p, nil
}

func readPersona(path string) (Persona, error) {
	var p Persona
	data, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	if len(data) > maxPersonaFile {
		return p, fmt.Errorf("%s is larger than %d KiB", path, maxPersonaFile>>10)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	for _, f := range append([]string{p.Alias, p.Tone, p.Language}, p.Topics...) {
		if len([]rune(f)) > maxPersonaField || strings.ContainsAny(f, "\r\n") {
			return p, fmt.Errorf("%s: a field is longer than %d characters or spans lines", path, maxPersonaField)
		}
	}
	if len(p.Topics) > maxTopics {
		return p, fmt.Errorf("%s: at most %d topics", path, maxTopics)
	}
	return p, nil
}

// merge lays over on p: every field over sets wins.
func (p Persona) merge(over Persona) Persona {
	if over.Alias != "" {
		p.Alias = over.Alias
	}
	if over.Tone != "" {
		p.Tone = over.Tone
	}
	if over.Language != "" {
		p.Language = over.Language
	}
	if len(over.Topics) > 0 {
		p.Topics = over.Topics
	}
	return p
}

// Lines are the persona as `!sys persona` shows it.
func (p Persona) Lines() []string {
	from := "built in"
	if len(p.From) > 0 {
		from = "built in, then " + strings.Join(p.From, ", then ")
	}
	esc := core.EscapeMarkdown
	return []string{
		"alias: " + esc(p.Alias),
		"tone: " + esc(p.Tone),
		"language: " + esc(p.Language),
		"may discuss: " + esc(strings.Join(p.Topics, "; ")),
		"from: " + esc(from),
	}
}
