// Package watchdog is Jarvis watching itself from outside: a dead-man's
// switch that pings a URL (a Healthchecks check, or another Jarvis's
// /api/ping) every period while Jarvis is healthy, and pings its /fail
// with the reason when it is not, so that someone hears of a Jarvis that
// is dead, hung or cut off even though it cannot say so in its room.
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Config is the watchdog section.
type Config struct {
	// PingURL is pinged every Period while Jarvis is healthy, and its
	// /fail when it is not; empty pings nothing.
	PingURL string
	// PingToken, when set, is sent as a bearer token (another Jarvis's
	// /api/ping needs an agent token).
	PingToken string
	// Period is how often Jarvis checks itself and pings.
	Period time.Duration
	// SenderStall is how long a notice may wait in the outbox before the
	// sender counts as stuck.
	SenderStall time.Duration
	// CrashLoop says when Jarvis's own restarts are announced.
	CrashLoop CrashLoopConfig
}

// Validate checks the watchdog section.
func (c Config) Validate() error {
	if c.PingURL != "" {
		u, err := url.Parse(c.PingURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return core.Invalid("watchdog.ping_url", "must be an http or https URL, not %q", c.PingURL)
		}
	}
	if c.Period < time.Second || c.Period > 24*time.Hour {
		return core.Invalid("watchdog.period", "must be between 1s and 24h, got %s", c.Period)
	}
	if c.SenderStall < time.Second {
		return core.Invalid("watchdog.sender_stall", "must be at least 1s, got %s", c.SenderStall)
	}
	if c.CrashLoop.Restarts < 0 {
		return core.Invalid("watchdog.crash_loop.restarts", "must be 0 (look for none) or more, got %d", c.CrashLoop.Restarts)
	}
	if c.CrashLoop.Restarts > 0 && c.CrashLoop.Window < time.Second {
		return core.Invalid("watchdog.crash_loop.window", "must be at least 1s, got %s", c.CrashLoop.Window)
	}
	return nil
}

// ErrStarting is what the check says before Jarvis has come up (its
// first sync): the round pings nothing, neither a ping nor a /fail, so
// that a routine restart stays within the receiver's grace time.
var ErrStarting = errors.New("starting")

// pingTimeout bounds one ping: a receiver that hangs does not hold the
// next one.
const pingTimeout = 10 * time.Second

// maxReason is the most of a failure's reason a /fail ping carries.
const maxReason = 1000

// Ping is the outcome of one round: whether Jarvis was healthy, why not,
// and what the receiver answered.
type Ping struct {
	At      time.Time
	Healthy bool
	// Reason is why Jarvis is not healthy; empty when it is.
	Reason string
	// Status is the receiver's HTTP status; 0 when it did not answer.
	Status int
	// Err is why the ping did not arrive; empty when it did.
	Err string
}

// Pinger pings the dead-man's switch.
type Pinger struct {
	cfg    Config
	check  func(ctx context.Context) error
	clock  core.Clock
	client *http.Client

	mu   sync.Mutex
	last Ping
}

// New makes a pinger that asks check whether Jarvis is healthy: nil when
// it is, else an error saying what is not.
func New(cfg Config, check func(ctx context.Context) error, clock core.Clock) *Pinger {
	return &Pinger{cfg: cfg, check: check, clock: clock, client: &http.Client{Timeout: pingTimeout}}
}

// Run pings every period until ctx ends; it pings nothing when no URL is
// configured.
func (p *Pinger) Run(ctx context.Context) {
	if p.cfg.PingURL == "" {
		return
	}
	ticker := time.NewTicker(p.cfg.Period)
	defer ticker.Stop()
	for {
		p.Once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Once checks Jarvis and pings: the URL when it is healthy, the URL's
// /fail with the reason as the body when it is not, nothing while it is
// starting (a zero Ping).
func (p *Pinger) Once(ctx context.Context) Ping {
	ping := Ping{At: p.clock.Now(), Healthy: true}
	target, body := p.cfg.PingURL, ""
	switch err := p.check(ctx); {
	case errors.Is(err, ErrStarting):
		return Ping{}
	case err != nil:
		ping.Healthy, ping.Reason = false, err.Error()
		target, body = failURL(p.cfg.PingURL), truncate(ping.Reason, maxReason)
	}
	ping.Status, ping.Err = p.send(ctx, target, body)
	p.mu.Lock()
	p.last = ping
	p.mu.Unlock()
	return ping
}

// Last is the latest round; its At is zero before the first.
func (p *Pinger) Last() Ping {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Configured reports whether a ping URL is set.
func (p *Pinger) Configured() bool { return p.cfg.PingURL != "" }

func (p *Pinger) send(ctx context.Context, target, body string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("User-Agent", "jarvis-watchdog")
	if p.cfg.PingToken != "" {
		req.Header.Set("Authorization", "Bearer "+p.cfg.PingToken)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Sprintf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, ""
}

// failURL is the URL with /fail added to its path, as Healthchecks and
// Jarvis's /api/ping take a failure.
func failURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/fail"
	u.RawPath = ""
	return u.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
