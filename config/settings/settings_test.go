package settings

import "testing"

func TestSnakeCase(t *testing.T) {
	for _, tt := range []struct{ field, key string }{
		{"UserID", "user_id"}, {"URLFetch", "url_fetch"}, {"RSS", "rss"}, {"ProposalTTL", "proposal_ttl"},
		{"HalfOpenTimeout", "half_open_timeout"}, {"ID", "id"}, {"MaxBytes", "max_bytes"},
	} {
		if got := Key(tt.field); got != tt.key {
			t.Errorf("Key(%s) = %s, want %s", tt.field, got, tt.key)
		}
	}
}
