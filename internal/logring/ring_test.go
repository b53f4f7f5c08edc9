package logring

import (
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestRedact(t *testing.T) {
	tests := []struct{ name, in, leak string }{
		{"json access token", `{"access_token":"syt_abc_123","message":"x"}`, "syt_abc_123"},
		{"bearer header", `Authorization: Bearer s3cr3t-t0ken`, "s3cr3t-t0ken"},
		{"bare matrix token", `token syt_amFydmlz_abcdef in text`, "syt_amFydmlz_abcdef"},
		{"password field", `{"password":"hunter22"}`, "hunter22"},
		{"query parameter", `GET /sync?access_token=abc123&since=s1`, "abc123"},
		{"signature", `{"signature":"deadbeef"}`, "deadbeef"},
		{"bare API token", `issued jat_00112233445566778899aabbccddeeff for EVE`, "jat_00112233445566778899aabbccddeeff"},
		{"a URL's API key", `Get "https://feed.example/v1?api_key=k3y-v4lue": timeout`, "k3y-v4lue"},
		{"a URL's query string", `Get "https://feed.example/v1?q=1&sig=s1gn3d": timeout`, "s1gn3d"},
		{"a URL's userinfo", `Get "https://bob:hunter22@feed.example/v1": refused`, "hunter22"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Redact(tt.in)
			if strings.Contains(out, tt.leak) || !strings.Contains(out, "[redacted]") {
				t.Errorf("Redact(%q) = %q", tt.in, out)
			}
		})
	}
}

// TestRingRedactsDecodedFields: a secret in a logged error is redacted
// once the line is decoded, so that the JSON escaping around it (a URL in
// quotes) neither hides it nor breaks the line.
func TestRingRedactsDecodedFields(t *testing.T) {
	r := New(5)
	log := zerolog.New(r)
	log.Warn().Err(errors.New(`Get "https://bob:hunter22@feed.example/v1?api_key=k3y-v4lue&q=1": dial tcp: i/o timeout`)).
		Str("component", "tripwires").Msg("Failed to read a tripwire source")
	lines := r.Last(1, zerolog.TraceLevel)
	if len(lines) != 1 {
		t.Fatalf("Last(1) = %q", lines)
	}
	want := `WARN Failed to read a tripwire source error=Get "https://[redacted]@feed.example/v1?[redacted]": dial tcp: i/o timeout component=tripwires`
	if !strings.HasSuffix(lines[0], want) {
		t.Errorf("the line reads\n %s\nwant it to end\n %s", lines[0], want)
	}
}

func TestRingKeepsNewestFilteredByLevel(t *testing.T) {
	r := New(5)
	log := zerolog.New(r)
	for i := range 8 {
		if i%2 == 0 {
			log.Warn().Int("i", i).Msgf("warn %d", i)
		} else {
			log.Info().Msgf("info %d", i)
		}
	}
	all := r.Last(10, zerolog.TraceLevel)
	if len(all) != 5 || !strings.Contains(all[0], "info 3") || !strings.Contains(all[4], "info 7") {
		t.Errorf("Last(10) = %q, want the 5 newest, oldest first", all)
	}
	warns := r.Last(10, zerolog.WarnLevel)
	if len(warns) != 2 || !strings.Contains(warns[0], "WARN warn 4") || !strings.Contains(warns[1], "warn 6") {
		t.Errorf("Last(warn) = %q", warns)
	}
	if two := r.Last(2, zerolog.TraceLevel); len(two) != 2 || !strings.Contains(two[1], "info 7") {
		t.Errorf("Last(2) = %q", two)
	}
}
