// Package settings reads configuration the way Jarvis reads its own: the
// values of an example file are the defaults, a file's values go over them,
// the environment's over both, and a section decodes into a struct whose
// fields are named by their keys in snake_case. It knows no section: the
// config package gathers them, and tests read the example's sections here
// when they cannot import config.
package settings

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// ExampleMark, as the line comment of a key or its value in an example
// file, says the value only shows what to write: the key has no default.
const ExampleMark = "# example"

// Settings are the values of one configuration: an example's as the
// defaults, and what a file and the environment set over them.
type Settings struct {
	v *viper.Viper
}

// FromExample starts settings whose defaults are the example file's values.
// Every key of the example is registered, so the environment can set any of
// them (see Environment).
func FromExample(example []byte) (*Settings, error) {
	defaults, err := Defaults(example)
	if err != nil {
		return nil, err
	}
	v := viper.New()
	for key, value := range defaults {
		v.SetDefault(key, value)
	}
	return &Settings{v: v}, nil
}

// Environment lets the environment set any key as PREFIX_<SECTION>_<KEY>:
// JARVIS_BOT_ADMINS for bot.admins under the prefix JARVIS.
func (s *Settings) Environment(prefix string) {
	s.v.SetEnvPrefix(prefix)
	s.v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	s.v.AutomaticEnv()
}

// Read reads a YAML file's values over the defaults.
func (s *Settings) Read(file io.Reader) error {
	s.v.SetConfigType("yaml")
	return s.v.ReadConfig(file)
}

// Get is the value of key: the environment's, the file's or the
// example's, as read (a list from a file is a []any, from the environment
// a string).
func (s *Settings) Get(key string) any { return s.v.Get(key) }

// IsSet says whether anything (the example, the file, the environment)
// sets key.
func (s *Settings) IsSet(key string) bool { return s.v.IsSet(key) }

// Decode decodes the section under key (all of it when key is empty) into
// the struct out points to. A key that names no field is an error.
func (s *Settings) Decode(key string, out any) error {
	opt := func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
		dc.MapFieldName = Key
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(
			objectsFromYAML, mapstructure.StringToTimeDurationHookFunc(), listFromCommas)
	}
	if key == "" {
		return s.v.Unmarshal(out, opt)
	}
	return s.v.UnmarshalKey(key, out, opt)
}

// Defaults reads an example file as defaults, keyed by dotted path: a
// mapping is a section whose keys are defaults each, anything else (a
// value, a list) is one default. A value marked ExampleMark counts as
// empty.
func Defaults(example []byte) (map[string]any, error) {
	defaults, _, err := readExample(example)
	return defaults, err
}

// Placeholder is a value of an example file marked ExampleMark: what a
// configuration copied from the example still holds where its author had
// to write their own.
type Placeholder struct {
	// Key is the dotted path.
	Key   string
	Value any
}

// Placeholders are the example file's placeholders, in the file's order.
func Placeholders(example []byte) ([]Placeholder, error) {
	_, placeholders, err := readExample(example)
	return placeholders, err
}

func readExample(example []byte) (defaults map[string]any, placeholders []Placeholder, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(example, &doc); err != nil {
		return nil, nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, errors.New("not a mapping of sections")
	}
	defaults = map[string]any{}
	err = addDefaults(defaults, &placeholders, "", doc.Content[0])
	return defaults, placeholders, err
}

// addDefaults adds the keys of mapping m, under prefix, to defaults, and
// those marked ExampleMark, with their values, to placeholders.
func addDefaults(defaults map[string]any, placeholders *[]Placeholder, prefix string, m *yaml.Node) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + strings.ToLower(k.Value)
		if v.Kind == yaml.MappingNode {
			if err := addDefaults(defaults, placeholders, key+".", v); err != nil {
				return err
			}
			continue
		}
		var value any
		if err := v.Decode(&value); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		switch {
		case strings.HasPrefix(k.LineComment, ExampleMark) || strings.HasPrefix(v.LineComment, ExampleMark):
			*placeholders = append(*placeholders, Placeholder{Key: key, Value: value})
			if v.Kind == yaml.SequenceNode {
				defaults[key] = []any{}
			} else {
				defaults[key] = ""
			}
		default:
			defaults[key] = value
		}
	}
	return nil
}

// Key gives the key of a struct's field: its name in snake_case, an
// acronym as one word (UserID is user_id, URLFetch is url_fetch,
// ProposalTTL is proposal_ttl). Errors name the field by it too.
func Key(field string) string {
	runes := []rune(field)
	var b strings.Builder
	for i, r := range runes {
		if i > 0 && unicode.IsUpper(r) && (unicode.IsLower(runes[i-1]) || i+1 < len(runes) && unicode.IsLower(runes[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// objectsFromYAML reads a list of objects given as one string, as the
// environment gives it, in YAML flow style:
// JARVIS_FLEET_AGENTS='[{name: EVE, cadence: 24h}]'.
func objectsFromYAML(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice {
		return data, nil
	}
	if elem := to.Elem().Kind(); elem != reflect.Struct && elem != reflect.Map {
		return data, nil
	}
	var list []any
	if err := yaml.Unmarshal([]byte(data.(string)), &list); err != nil {
		return nil, fmt.Errorf("want a list in YAML flow style, e.g. [{name: x}, {name: y}]: %w", err)
	}
	return list, nil
}

// listFromCommas reads a list of values given as one string, as the
// environment gives it, separated by commas: JARVIS_BOT_ADMINS=@a:x,@b:x.
func listFromCommas(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice {
		return data, nil
	}
	if data.(string) == "" {
		return []string{}, nil
	}
	return strings.Split(data.(string), ","), nil
}
