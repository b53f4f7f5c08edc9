package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/config/settings"
	"github.com/jarvis-hmi/jarvis/core"
)

// envPrefix starts the environment variable of every key:
// JARVIS_BOT_PASSWORD is bot.password.
const envPrefix = "JARVIS"

// file is a configuration file as read, with where each of its keys is,
// so that an error names the file and the line.
type file struct {
	path string
	data []byte
	// root is the file's top mapping; nil for an empty file.
	root *yaml.Node
}

// readFile reads and parses the configuration file at path. A YAML error
// names the file and the line.
func readFile(path string) (*file, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	f := &file{path: path, data: data}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// yaml.v3 says "yaml: line N: …".
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 1 {
		if doc.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: the configuration is a mapping of sections (homeserver:, bot:, …)", path, doc.Content[0].Line)
		}
		f.root = doc.Content[0]
	}
	return f, nil
}

// envVar is the environment variable that sets key.
func envVar(key string) string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// at wraps err, about key, with where key's value came from: the
// environment variable that set it, or the file and line. An error about
// a key set nowhere (its default is wrong for another key's value) is
// returned as it is.
func (f *file) at(key string, err error) error {
	if _, ok := os.LookupEnv(envVar(key)); ok {
		return fmt.Errorf("%s: %w", envVar(key), err)
	}
	if f == nil {
		return err
	}
	if n, line := f.lookup(key); n != nil {
		return fmt.Errorf("%s:%d: %w", f.path, line, err)
	}
	return err
}

// lookup finds key, a dotted path whose parts may carry list indexes
// (bridges.networks[0].users): its value's node, and the line that names
// it (the key's, or the list item's); nil when the file does not set it.
func (f *file) lookup(key string) (value *yaml.Node, line int) {
	value = f.root
	for part := range strings.SplitSeq(key, ".") {
		name, indexes, _ := strings.Cut(part, "[")
		var k *yaml.Node
		if k, value = child(value, name); value == nil {
			return nil, 0
		}
		line = k.Line
		for idx := range strings.SplitSeq(indexes, "[") {
			if idx == "" {
				continue
			}
			i, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			if value.Kind != yaml.SequenceNode || err != nil || i >= len(value.Content) {
				return nil, 0
			}
			value = value.Content[i]
			line = value.Line
		}
	}
	return value, line
}

// child is the key and value of key in mapping m, keys compared as the
// configuration compares them, without case; nils when m is no mapping or
// has no such key.
func child(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if strings.EqualFold(m.Content[i].Value, key) {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// unknownKeys refuses a key that names no field of the configuration,
// with its line and the closest known key at that level. Below a field
// that is a map (cards.budget's classes) any key is the file's own. No
// file has none.
func (f *file) unknownKeys() error {
	var errs []error
	var walk func(prefix string, m *yaml.Node, t reflect.Type)
	walk = func(prefix string, m *yaml.Node, t reflect.Type) {
		if m.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			field, ok := fieldByKey(t, strings.ToLower(k.Value))
			if !ok {
				err := fmt.Errorf("%s:%d: %s%s is no key", f.path, k.Line, prefix, k.Value)
				if near := closest(strings.ToLower(k.Value), fieldKeys(t)); near != "" {
					err = fmt.Errorf("%w; did you mean %s%s?", err, prefix, near)
				}
				errs = append(errs, err)
				continue
			}
			ft := field.Type
			switch {
			case ft.Kind() == reflect.Struct:
				walk(prefix+strings.ToLower(k.Value)+".", v, ft)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && v.Kind == yaml.SequenceNode:
				for j, item := range v.Content {
					walk(fmt.Sprintf("%s%s[%d].", prefix, strings.ToLower(k.Value), j), item, ft.Elem())
				}
			}
		}
	}
	if f != nil && f.root != nil {
		walk("", f.root, reflect.TypeFor[Config]())
	}
	return errors.Join(errs...)
}

// fieldByKey is the field of struct t whose key (settings.Key) is key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && settings.Key(f.Name) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldKeys are the keys of struct t's fields.
func fieldKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() {
			keys = append(keys, settings.Key(f.Name))
		}
	}
	return keys
}

// closest is the key of keys nearest to key by edit distance, if it is
// near enough to be a typo of it (at most a third of its letters, and
// at least one, changed); "" when none is.
func closest(key string, keys []string) string {
	best, bestDist := "", max(1, len(key)/3)+1
	for _, k := range keys {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// placeholders refuses every key still at the example's value for it (the
// values marked "# example": example.org's homeserver and users,
// change-me), each with where it is set. The bot section is Matrix's:
// with no homeserver nothing reads it. A secret that is `generate` is no
// placeholder: Jarvis writes a fresh one in its place.
func placeholders(s *settings.Settings, f *file) error {
	examples, err := settings.Placeholders(Example)
	if err != nil {
		return err
	}
	matrix := s.Get("homeserver.url") != ""
	var errs []error
	for _, p := range examples {
		if !matrix && strings.HasPrefix(p.Key, "bot.") || slices.Contains(generatedSecrets, p.Key) && s.Get(p.Key) == bot.GeneratePickleKey {
			continue
		}
		if reflect.DeepEqual(s.Get(p.Key), p.Value) {
			errs = append(errs, f.at(p.Key, core.Invalid(p.Key, "is still the example's value (%v): write your own", p.Value)))
		}
	}
	return errors.Join(errs...)
}

// UnknownEnvironment names each JARVIS_… variable of the environment that
// sets no key, with the variable of the closest key when one is near
// enough to be a typo of it ("" when none is): Jarvis warns of them at
// start, since it reads none of them.
func UnknownEnvironment() map[string]string {
	defaults, err := settings.Defaults(Example)
	if err != nil {
		return nil
	}
	known := make([]string, 0, len(defaults))
	for key := range defaults {
		known = append(known, envVar(key))
	}
	unknown := map[string]string{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix+"_") && !slices.Contains(known, name) {
			unknown[name] = closest(name, known)
		}
	}
	return unknown
}
