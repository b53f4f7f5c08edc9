package bot

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// HomeserverConfig says where the homeserver is and how long Jarvis waits
// for it.
type HomeserverConfig struct {
	// URL is the homeserver's client-server API; empty for a workspace
	// used from the console only.
	URL string
	// RequestTimeout is the longest a request may take, its answer read
	// whole; a sync long-poll gets its poll on top.
	RequestTimeout time.Duration
}

// Validate checks the config.
func (c HomeserverConfig) Validate() error {
	if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		return core.Invalid("homeserver.url", "must be an http(s) URL, got %q", c.URL)
	}
	if c.RequestTimeout < time.Second {
		return core.Invalid("homeserver.request_timeout", "must be at least 1s, got %s", c.RequestTimeout)
	}
	return nil
}

// firstSyncTimeout is the deadline of a sync without a since token: it
// carries the whole state of every room Jarvis is in.
const firstSyncTimeout = 3 * time.Minute

// deadlineTransport gives every request to the homeserver a deadline, so
// one the homeserver never answers (a send hung after a restart) fails
// instead of holding the outbox behind it. A send cut off by its deadline
// has no answer: its outcome is unknown, and the sender looks in the room
// before it sends again.
type deadlineTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t deadlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.deadline(req))
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	// The deadline covers reading the answer too; it ends with the body.
	resp.Body = cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// deadline is the request's deadline: the timeout, plus the poll for a
// sync that waits for events.
func (t deadlineTransport) deadline(req *http.Request) time.Duration {
	if !strings.HasSuffix(req.URL.Path, "/sync") {
		return t.timeout
	}
	query := req.URL.Query()
	if query.Get("since") == "" {
		return max(firstSyncTimeout, t.timeout)
	}
	poll, _ := strconv.Atoi(query.Get("timeout"))
	return time.Duration(poll)*time.Millisecond + t.timeout
}

// cancelBody ends a request's deadline when its answer is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
