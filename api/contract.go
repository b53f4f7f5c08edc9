package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// openAPISource is the API's contract, written once: every route under
// /api/ with its request and response bodies. The API serves it as JSON at
// GET /api/openapi.json and validates every request body against it; the
// tests validate every request they send and every answer they get.
//
//go:embed openapi.yaml
var openAPISource []byte

// contract is the parsed document and its JSON, read once.
var contract = sync.OnceValues(func() (*openapi3.T, []byte) {
	var tree any
	if err := yaml.Unmarshal(openAPISource, &tree); err != nil {
		panic(fmt.Sprintf("api: openapi.yaml: %v", err))
	}
	doc, err := json.MarshalIndent(tree, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("api: openapi.yaml as JSON: %v", err))
	}
	t, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		panic(fmt.Sprintf("api: openapi.yaml: %v", err))
	}
	return t, doc
})

// OpenAPI returns the API's OpenAPI 3.1 document, as GET /api/openapi.json
// serves it.
func OpenAPI() []byte {
	_, doc := contract()
	return doc
}

// getOpenAPI serves the document.
func getOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI())
}

// requestSchema returns the JSON schema of pattern's request body and
// whether the body may be left out; nil when the route takes no body or
// the document does not name it.
func requestSchema(pattern string) (*openapi3.Schema, bool) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		return nil, false
	}
	doc, _ := contract()
	item := doc.Paths.Value(path)
	if item == nil {
		return nil, false
	}
	op := item.GetOperation(method)
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil, false
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil {
		return nil, false
	}
	return media.Schema.Value, !op.RequestBody.Value.Required
}

// maxLoggedUnknown bounds how many (credential, field) pairs of unknown
// fields are remembered, so that a caller sending ever new names cannot
// grow it.
const maxLoggedUnknown = 1024

// unknownFields remembers which unknown fields were logged for which
// credential, so that each is logged once.
type unknownFields struct {
	mu   sync.Mutex
	seen map[string]bool
}

// first reports whether key is new, remembering it while there is room.
func (u *unknownFields) first(key string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	if u.seen[key] || len(u.seen) >= maxLoggedUnknown {
		return false
	}
	u.seen[key] = true
	return true
}

// validated checks a request's JSON body against pattern's schema before h
// sees it, and answers every bad field at once (400, errors). A body that
// is not JSON, or too large, goes to h as it came, whose DecodeJSON says
// what is wrong with it. Fields the schema does not name are ignored, and
// logged once per credential.
func (s *Server) validated(pattern string, h http.Handler) http.Handler {
	schema, optional := requestSchema(pattern)
	if schema == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody(pattern)))
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), errReader{err}))
		var body any
		if err != nil || json.Unmarshal(data, &body) != nil {
			h.ServeHTTP(w, r)
			return
		}
		if len(bytes.TrimSpace(data)) == 0 && optional {
			h.ServeHTTP(w, r)
			return
		}
		if agent, ok := anotherAgent(r, body); ok {
			// Who may report comes before what is wrong with the report.
			WriteError(w, r, actAs(r.Context(), agent))
			return
		}
		v := schemaCheck{}
		v.check("", schema, body)
		if len(v.unknown) > 0 {
			s.logUnknown(r, v.unknown)
		}
		if len(v.errs) > 0 {
			WriteError(w, r, v.errs)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// anotherAgent returns the agent an agent token's request names in its
// body when it is not the token's own.
func anotherAgent(r *http.Request, body any) (string, bool) {
	p, ok := PrincipalOf(r.Context())
	fields, isObject := body.(map[string]any)
	agent, named := fields["agent"].(string)
	return agent, ok && isObject && named && agent != "" && p.Role == credential.Agent && !strings.EqualFold(agent, p.Agent)
}

// logUnknown logs the unknown fields of an authenticated caller's request,
// each once per credential.
func (s *Server) logUnknown(r *http.Request, fields []string) {
	p, ok := PrincipalOf(r.Context())
	if !ok {
		return
	}
	for _, f := range fields {
		if s.unknown.first(p.ID + " " + f) {
			zerolog.Ctx(r.Context()).Info().Str("agent", p.Agent).Str("field", f).
				Msg("Ignoring a field this Jarvis does not know (logged once per credential)")
		}
	}
}

// errReader ends a body that was read to its end with the error reading it
// ended with (nil: the end).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// schemaCheck collects what is wrong with a JSON value, field by field,
// in JSON's words, and the fields the schema does not name.
type schemaCheck struct {
	errs    FieldErrors
	unknown []string
}

func (c *schemaCheck) fail(path, format string, args ...any) {
	c.errs = append(c.errs, core.Invalid(path, format, args...).(*core.FieldError))
}

func (c *schemaCheck) check(path string, s *openapi3.Schema, v any) {
	for _, sub := range s.AllOf {
		c.check(path, sub.Value, v)
	}
	if v == nil {
		if !s.Type.IsEmpty() && !s.Type.IncludesNull() {
			c.fail(path, "must be %s, not null", describe(s))
		}
		return
	}
	if !typeFits(s, v) {
		c.fail(path, "must be %s", describe(s))
		return
	}
	switch v := v.(type) {
	case string:
		if !valueFits(s, v) {
			c.fail(path, "must be %s", describe(s))
		}
	case float64:
		if !valueFits(s, v) {
			c.fail(path, "must be %s", describe(s))
		}
	case []any:
		if s.Items != nil {
			for i, item := range v {
				c.check(fmt.Sprintf("%s[%d]", path, i), s.Items.Value, item)
			}
		}
	case map[string]any:
		c.object(path, s, v)
	}
}

// object checks an object's required fields, then each field, in name
// order so that the errors read the same every time.
func (c *schemaCheck) object(path string, s *openapi3.Schema, v map[string]any) {
	prefix := path
	if prefix != "" {
		prefix += "."
	}
	for _, name := range s.Required {
		if _, ok := v[name]; !ok {
			c.fail(prefix+name, "is required")
		}
	}
	names := make([]string, 0, len(v))
	for name := range v {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		prop, ok := s.Properties[name]
		switch {
		case ok:
			c.check(prefix+name, prop.Value, v[name])
		case len(s.Properties) > 0 && !namedInAllOf(s, name):
			c.unknown = append(c.unknown, prefix+name)
		}
	}
}

// namedInAllOf reports whether one of s's allOf schemas names the field.
func namedInAllOf(s *openapi3.Schema, name string) bool {
	for _, sub := range s.AllOf {
		if _, ok := sub.Value.Properties[name]; ok {
			return true
		}
	}
	return false
}

// typeFits reports whether v is of one of s's types (any, when it names
// none).
func typeFits(s *openapi3.Schema, v any) bool {
	if s.Type.IsEmpty() {
		return true
	}
	switch v := v.(type) {
	case string:
		return s.Type.Permits("string")
	case bool:
		return s.Type.Permits("boolean")
	case float64:
		return s.Type.Permits("number") || (s.Type.Permits("integer") && v == math.Trunc(v))
	case []any:
		return s.Type.Permits("array")
	case map[string]any:
		return s.Type.Permits("object")
	}
	return false
}

// valueFits reports whether a string or number is one s allows.
func valueFits(s *openapi3.Schema, v any) bool {
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		return false
	}
	switch v := v.(type) {
	case string:
		if s.MaxLength != nil && uint64(len([]rune(v))) > *s.MaxLength || uint64(len([]rune(v))) < s.MinLength {
			return false
		}
		if s.Pattern != "" && !patternOf(s.Pattern).MatchString(v) {
			return false
		}
		if s.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339, v); err != nil {
				return false
			}
		}
	case float64:
		if s.Min != nil && v < *s.Min || s.Max != nil && v > *s.Max {
			return false
		}
	}
	return true
}

// patterns are the schema's patterns, compiled once each.
var patterns sync.Map

func patternOf(p string) *regexp.Regexp {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(p)
	patterns.Store(p, re)
	return re
}

// describe says in JSON's words what a schema takes: "a number between 0
// and 1", "one of green, yellow or red", "an RFC 3339 time such as
// 2026-04-17T00:00:00Z".
func describe(s *openapi3.Schema) string {
	if len(s.Enum) > 0 {
		names := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			names[i] = fmt.Sprint(e)
		}
		if len(names) == 1 {
			return names[0]
		}
		return "one of " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	}
	types := s.Type.Slice()
	types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "null" })
	if len(types) != 1 {
		return "a JSON value of the documented type"
	}
	switch types[0] {
	case "string":
		switch {
		case s.Format == "date-time":
			return "an RFC 3339 time such as 2026-04-17T00:00:00Z"
		case s.Pattern != "":
			return "a string matching " + s.Pattern
		case s.MaxLength != nil:
			return fmt.Sprintf("a string of at most %d characters", *s.MaxLength)
		case s.MinLength > 0:
			return "a non-empty string"
		}
		return "a string"
	case "number", "integer":
		what := "a number"
		if types[0] == "integer" {
			what = "a whole number"
		}
		switch {
		case s.Min != nil && s.Max != nil:
			return fmt.Sprintf("%s between %s and %s", what, num(*s.Min), num(*s.Max))
		case s.Min != nil:
			return fmt.Sprintf("%s of at least %s", what, num(*s.Min))
		case s.Max != nil:
			return fmt.Sprintf("%s of at most %s", what, num(*s.Max))
		}
		return what
	case "boolean":
		return "true or false"
	case "array":
		return "a list"
	case "object":
		return "an object"
	}
	return "a " + types[0]
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
