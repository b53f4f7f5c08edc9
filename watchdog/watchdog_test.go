package watchdog_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/watchdog"
)

// receiver is a Healthchecks-like endpoint on loopback that records each
// ping's path, body and bearer token.
type receiver struct {
	mu    sync.Mutex
	pings []string
	code  int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pings = append(r.pings, req.Method+" "+req.URL.Path+" "+req.Header.Get("Authorization")+" "+string(body))
	if r.code != 0 {
		w.WriteHeader(r.code)
	}
}

func (r *receiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.pings...)
}

// TestPinger: a healthy Jarvis pings the URL, an unhealthy one pings its
// /fail with the reason, a starting one nothing; a receiver that refuses or is gone is recorded
// as the last ping's error, for !sys status.
func TestPinger(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	clock := coretest.NewClock(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	var health error
	p := watchdog.New(watchdog.Config{PingURL: srv.URL + "/ping/abc", PingToken: "tok", Period: time.Minute, SenderStall: time.Minute},
		func(context.Context) error { return health }, clock)
	ctx := context.Background()

	if got := p.Once(ctx); !got.Healthy || got.Status != 200 || got.Err != "" {
		t.Errorf("healthy round = %+v, want healthy, 200", got)
	}
	health = errors.New("sync: no answer from the homeserver for 3m0s")
	clock.Advance(time.Minute)
	if got := p.Once(ctx); got.Healthy || got.Reason != health.Error() || got.Status != 200 {
		t.Errorf("unhealthy round = %+v, want the reason and 200", got)
	}
	want := []string{
		"POST /ping/abc Bearer tok ",
		"POST /ping/abc/fail Bearer tok sync: no answer from the homeserver for 3m0s",
	}
	if got := rcv.got(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the receiver saw\n%q\nwant\n%q", got, want)
	}

	health = nil
	rcv.code = http.StatusNotFound
	if got := p.Once(ctx); got.Status != 404 || !strings.Contains(got.Err, "404") {
		t.Errorf("refused round = %+v, want 404 recorded", got)
	}
	health = watchdog.ErrStarting
	if got := p.Once(ctx); !got.At.IsZero() || len(rcv.got()) != 3 {
		t.Errorf("a round while starting = %+v and %d pings, want nothing sent", got, len(rcv.got()))
	}
	health = nil
	srv.Close()
	got := p.Once(ctx)
	if got.Status != 0 || got.Err == "" || !p.Last().At.Equal(clock.Now()) {
		t.Errorf("round with the receiver gone = %+v, want an error", got)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := watchdog.Config{Period: time.Minute, SenderStall: time.Minute}
	for _, tt := range []struct {
		name    string
		edit    func(*watchdog.Config)
		wantKey string
	}{
		{name: "no URL"},
		{name: "a URL", edit: func(c *watchdog.Config) { c.PingURL = "https://hc-ping.com/5e1f" }},
		{name: "not http", edit: func(c *watchdog.Config) { c.PingURL = "ftp://x" }, wantKey: "watchdog.ping_url"},
		{name: "a period too short", edit: func(c *watchdog.Config) { c.Period = 0 }, wantKey: "watchdog.period"},
		{name: "no sender stall", edit: func(c *watchdog.Config) { c.SenderStall = 0 }, wantKey: "watchdog.sender_stall"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			if tt.edit != nil {
				tt.edit(&c)
			}
			err := c.Validate()
			if (err == nil) != (tt.wantKey == "") || (err != nil && !strings.Contains(err.Error(), tt.wantKey)) {
				t.Errorf("Validate() = %v, want an error naming %q", err, tt.wantKey)
			}
		})
	}
}
