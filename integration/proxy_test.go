package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// stallProxy passes requests on to a homeserver. The first request that
// matches what it is armed for goes through, and the homeserver's answer
// is held until the client gives up, the test releases it, or two
// minutes pass.
type stallProxy struct {
	*httptest.Server
	next http.RoundTripper
	// stalled is closed when the homeserver has answered the held
	// request; closing release hands the answer on.
	stalled, release chan struct{}

	mu    sync.Mutex
	match func(*http.Request) bool
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{next: http.DefaultTransport, stalled: make(chan struct{}), release: make(chan struct{})}
	p.Server = httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:      func(r *httputil.ProxyRequest) { r.SetURL(to) },
		Transport:    p,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	})
	t.Cleanup(p.Close)
	return p
}

// stallNext arms the proxy for the next request that matches.
func (p *stallProxy) stallNext(match func(*http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.match = match
}

func (p *stallProxy) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	p.mu.Lock()
	stall := p.match != nil && p.match(req)
	if stall {
		p.match = nil
	}
	p.mu.Unlock()
	if !stall {
		return resp, nil
	}
	close(p.stalled)
	select {
	case <-req.Context().Done():
		resp.Body.Close()
		return nil, req.Context().Err()
	case <-p.release:
	case <-time.After(2 * time.Minute):
	}
	return resp, nil
}

// skipProxy passes requests on to a homeserver. Armed with a sender, it
// takes that sender's events out of the next sync answer that has any, as
// a homeserver going away once did, and fails the sync after it, as the
// homeserver's going away would.
type skipProxy struct {
	*httptest.Server
	// skipped receives the IDs of the events taken out.
	skipped chan []string

	mu       sync.Mutex
	sender   id.UserID
	failNext bool
}

func newSkipProxy(t *testing.T, target string) *skipProxy {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &skipProxy{skipped: make(chan []string, 1)}
	p.Server = httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:        func(r *httputil.ProxyRequest) { r.SetURL(to) },
		Transport:      p,
		ModifyResponse: p.skip,
		ErrorHandler:   func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	})
	t.Cleanup(p.Close)
	return p
}

// skipFrom arms the proxy for sender's events.
func (p *skipProxy) skipFrom(sender id.UserID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sender = sender
}

func isSync(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/sync") }

func (p *skipProxy) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	fail := p.failNext && isSync(req)
	if fail {
		p.failNext = false
	}
	p.mu.Unlock()
	if fail {
		return nil, errors.New("the homeserver is away")
	}
	return http.DefaultTransport.RoundTrip(req)
}

// skip takes the armed sender's events out of a sync answer's timelines.
func (p *skipProxy) skip(resp *http.Response) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sender == "" || !isSync(resp.Request) || resp.StatusCode != http.StatusOK {
		return nil
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	var sync mautrix.RespSync
	if err := json.Unmarshal(raw, &sync); err != nil {
		return err
	}
	var skipped []string
	for _, room := range sync.Rooms.Join {
		room.Timeline.Events = slices.DeleteFunc(room.Timeline.Events, func(evt *event.Event) bool {
			if evt.Sender != p.sender {
				return false
			}
			skipped = append(skipped, evt.ID.String())
			return true
		})
	}
	if len(skipped) > 0 {
		if raw, err = json.Marshal(&sync); err != nil {
			return err
		}
		p.sender, p.failNext = "", true
		p.skipped <- skipped
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	resp.ContentLength = int64(len(raw))
	resp.Header.Set("Content-Length", strconv.Itoa(len(raw)))
	return nil
}
