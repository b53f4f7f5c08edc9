package api

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

// sweepEvery is how often a limiter forgets the buckets that have filled
// up again, so that callers seen once do not stay in memory.
const sweepEvery = time.Minute

// limits are the two kinds of bucket a request draws from.
type limits struct {
	// credential has one bucket per valid credential.
	credential *limiter
	// address has one bucket per remote address for requests without a
	// valid credential (a wrong token included, so that trying tokens
	// gives no fresh bucket).
	address *limiter
}

// limit answers 429, with Retry-After in seconds, to a caller whose
// bucket is empty; nothing behind it runs.
func (s *Server) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind, l, key := "address", s.limits.address, addressKey(r.RemoteAddr)
		p, err := s.authenticate(r)
		if err == nil {
			kind, l, key = "credential", s.limits.credential, p.ID
		} else if bucket, ok := s.bearerBucket(r); ok {
			kind, l, key = "credential", s.limits.credential, bucket
			// The handler behind reads it rather than looking the token up
			// again.
			r = r.WithContext(context.WithValue(r.Context(), bearerBucketKey{}, bucket))
		}
		r = withAuthenticated(r, p, err)
		if ok, wait := l.take(key, s.clock.Now()); !ok {
			secs := max(1, int(math.Ceil(wait.Seconds())))
			metrics.RateLimited.WithLabelValues(kind).Inc()
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			WriteError(w, r, core.OverLimit(core.ErrRateLimited, "api.rate_limit."+kind,
				"too many requests from this %s; retry after %d s", kind, secs))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerBucket is the bucket of the request's bearer token when one of
// the LimitBearers knows it.
func (s *Server) bearerBucket(r *http.Request) (string, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return "", false
	}
	for _, bucket := range s.bearers {
		if key, ok := bucket(r.Context(), token); ok {
			return key, true
		}
	}
	return "", false
}

// bearerBucketKey carries, in a request's context, the bucket limit
// found for its bearer token.
type bearerBucketKey struct{}

// limitedBearer is the bucket limit found for the request's bearer token
// (see LimitBearers), if any.
func limitedBearer(r *http.Request) (string, bool) {
	bucket, ok := r.Context().Value(bearerBucketKey{}).(string)
	return bucket, ok
}

// addressKey is the bucket of a remote address: the IP, or for IPv6 its
// /64, which one subscriber usually holds whole.
func addressKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

// limiter is a token bucket per key: a bucket holds up to burst requests
// and refills at rate a second. A nil limiter allows everything.
type limiter struct {
	rate, burst float64

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

// newLimiter returns the limiter of r, or nil when r sets no limit.
func newLimiter(r Rate) *limiter {
	if r.PerSecond <= 0 || r.Burst < 1 {
		return nil
	}
	return &limiter{rate: r.PerSecond, burst: float64(r.Burst), buckets: map[string]*bucket{}}
}

// take draws one request from key's bucket at now. When the bucket is
// empty it draws nothing and says how long until it holds one again.
func (l *limiter) take(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = min(l.burst, b.tokens+elapsed.Seconds()*l.rate)
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// sweep forgets, at most once every sweepEvery, the buckets that have
// filled up again: a forgotten bucket and a new one are the same.
func (l *limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < sweepEvery {
		return
	}
	l.lastSweep = now
	for key, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, key)
		}
	}
}
