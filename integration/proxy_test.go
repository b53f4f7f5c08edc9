package integration

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"
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
