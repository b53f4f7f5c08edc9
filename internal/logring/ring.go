// Package logring keeps the last log lines in memory, with secrets
// redacted, for `!sys logs`.
package logring

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// secrets match the values that must never reach a chat room: Matrix
// access tokens, bearer tokens, JSON fields that name a secret, and a
// URL's userinfo and query string (a source's `?api_key=…`).
var secrets = []*regexp.Regexp{
	regexp.MustCompile(`(?i)("(?:access_token|password|agent_token|token|signature|secret|pickle_key|authorization)"\s*:\s*")[^"]*(")`),
	regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+()`),
	regexp.MustCompile(`()\bsy[tg]_[A-Za-z0-9_]+()`),
	regexp.MustCompile(`()\bjat_[0-9a-f]+()`),
	regexp.MustCompile(`(?i)((?:access_token|token|password|signature|api_?key|secret)=)[^&\s"]+()`),
	regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.-]*://)[^\s/?#@"]+(@)`),
	regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#"]*\?)[^\s#"]+()`),
}

// Redact replaces secret values in a log line with "[redacted]".
func Redact(line string) string {
	for _, re := range secrets {
		line = re.ReplaceAllString(line, "${1}[redacted]${2}")
	}
	return line
}

// Ring is an io.Writer for zerolog JSON output that keeps the last lines.
type Ring struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

// New returns a ring keeping size lines.
func New(size int) *Ring { return &Ring{lines: make([]string, size)} }

// Write stores one log line (zerolog writes one JSON object per call). It
// is redacted as it is read back, field by field once the JSON is
// decoded: redacting the JSON text could cut through an escape and leave
// a line that no longer decodes, secrets and all.
func (r *Ring) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	r.mu.Lock()
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
	if r.next == 0 {
		r.full = true
	}
	r.mu.Unlock()
	return len(p), nil
}

// Last returns up to n of the newest lines at or above level, oldest
// first, each shortened to "time level message key=value…", redacted.
func (r *Ring) Last(n int, level zerolog.Level) []string {
	r.mu.Lock()
	var all []string
	if r.full {
		all = append(all, r.lines[r.next:]...)
	}
	all = append(all, r.lines[:r.next]...)
	r.mu.Unlock()
	var out []string
	for i := len(all) - 1; i >= 0 && len(out) < n; i-- {
		if text, ok := format(all[i], level); ok {
			out = append(out, text)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func format(line string, min zerolog.Level) (string, bool) {
	var fields map[string]any
	if err := json.Unmarshal([]byte(line), &fields); err != nil {
		return Redact(line), min <= zerolog.InfoLevel
	}
	lvl, _ := zerolog.ParseLevel(asString(fields["level"]))
	if lvl < min {
		return "", false
	}
	var b strings.Builder
	ts := asString(fields["time"])
	if len(ts) >= 19 {
		ts = ts[11:19]
	}
	b.WriteString(ts + " " + strings.ToUpper(asString(fields["level"])) + " " + Redact(asString(fields["message"])))
	for _, key := range []string{"error", "component", "room_id", "sender", "command", "notice"} {
		if v := asString(fields[key]); v != "" {
			b.WriteString(" " + key + "=" + Redact(v))
		}
	}
	return b.String(), true
}

func asString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
