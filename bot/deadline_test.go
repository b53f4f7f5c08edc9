package bot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestDeadlineTransport: a request the homeserver does not answer fails
// at its deadline, while a sync's long-poll gets its poll on top.
func TestDeadlineTransport(t *testing.T) {
	const timeout = 200 * time.Millisecond
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_matrix/client/v3/sync" {
			time.Sleep(2 * timeout) // a long-poll that ends with no events
			_, _ = w.Write([]byte(`{}`))
			return
		}
		<-release // a send that hangs
	}))
	defer srv.Close()
	defer close(release)
	cli := &http.Client{Transport: deadlineTransport{next: http.DefaultTransport, timeout: timeout}}

	tests := []struct {
		name    string
		path    string
		timeout bool
	}{
		{"a hung send fails at its deadline", "/_matrix/client/v3/rooms/!r:x/send/m.room.message/t1", true},
		{"a long-poll longer than the deadline is answered", "/_matrix/client/v3/sync?since=s1&timeout=1000", false},
		{"a long-poll past its poll and deadline fails", "/_matrix/client/v3/sync?since=s1&timeout=100", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+tt.path, nil)
			start := time.Now()
			resp, err := cli.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			if got := errors.Is(err, context.DeadlineExceeded); got != tt.timeout {
				t.Fatalf("deadline exceeded = %v after %s (err %v), want %v", got, time.Since(start), err, tt.timeout)
			}
		})
	}
}
