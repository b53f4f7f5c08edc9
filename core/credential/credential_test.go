package credential_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// memStore keeps credentials in memory and counts look-ups.
type memStore struct {
	byHash  map[string]credential.Credential
	keys    map[string][]byte
	lookups int

	mu sync.Mutex
	// touches are the writes of last uses, in order.
	touches []map[string]time.Time
	// touchErr fails the writes of last uses while set.
	touchErr error
	// touching, when set, is sent each write of last uses, which then
	// waits for release before it is recorded.
	touching chan map[string]time.Time
	release  chan struct{}
}

func (m *memStore) InsertCredential(_ context.Context, c credential.Credential, hash string, key []byte) error {
	m.byHash[hash], m.keys[hash] = c, key
	return nil
}

func (m *memStore) CredentialByHash(_ context.Context, hash string) (credential.Credential, []byte, error) {
	m.lookups++
	c, ok := m.byHash[hash]
	if !ok {
		return c, nil, core.ErrNotFound
	}
	return c, m.keys[hash], nil
}

func (m *memStore) ListCredentials(context.Context) ([]credential.Credential, error) { return nil, nil }

func (m *memStore) DeleteCredential(_ context.Context, id string) error {
	for h, c := range m.byHash {
		if c.ID == id {
			delete(m.byHash, h)
			return nil
		}
	}
	return core.ErrNotFound
}

func (m *memStore) TouchCredentials(_ context.Context, uses map[string]time.Time) error {
	if m.touching != nil {
		m.touching <- uses
		<-m.release
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.touchErr != nil {
		return m.touchErr
	}
	m.touches = append(m.touches, maps.Clone(uses))
	return nil
}

func (m *memStore) written() []map[string]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.touches)
}

// TestTouchesWrittenTogether: the last uses of credentials are written one
// transaction at a time. A request that finds a write under way does not
// wait for it: the request writing also writes what came meanwhile, in
// one write. A write that fails is made again by the credential's next
// request; one that succeeded is not made again within the minute.
func TestTouchesWrittenTogether(t *testing.T) {
	ctx := context.Background()
	st := &memStore{byHash: map[string]credential.Credential{}, keys: map[string][]byte{},
		touching: make(chan map[string]time.Time), release: make(chan struct{})}
	clock := coretest.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	svc := credential.NewService(credential.Deps{Store: st, Clock: clock})
	tokens := map[string]string{}
	ids := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		token, c, err := svc.Issue(ctx, credential.Supervisor, "")
		if err != nil {
			t.Fatal(err)
		}
		tokens[name], ids[name] = token, c.ID
	}
	first := make(chan error)
	go func() {
		_, err := svc.Authenticate(ctx, tokens["a"])
		first <- err
	}()
	held := <-st.touching // a's write, held until released
	for _, name := range []string{"b", "c"} {
		if _, err := svc.Authenticate(ctx, tokens[name]); err != nil {
			t.Fatal(err)
		}
	}
	if want := (map[string]time.Time{ids["a"]: clock.Now()}); !maps.Equal(held, want) {
		t.Errorf("first write %v, want %v", held, want)
	}
	st.release <- struct{}{}
	second := <-st.touching
	st.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if want := (map[string]time.Time{ids["b"]: clock.Now(), ids["c"]: clock.Now()}); !maps.Equal(second, want) {
		t.Errorf("second write %v, want b's and c's uses together: %v", second, want)
	}
	if got := st.written(); len(got) != 2 {
		t.Errorf("%d writes, want 2: %v", len(got), got)
	}

	st.touching = nil
	clock.Advance(time.Minute)
	st.touchErr = errors.New("database gone")
	for range 2 {
		if _, err := svc.Authenticate(ctx, tokens["a"]); err != nil {
			t.Fatalf("a failed write of the last use refused the request: %v", err)
		}
	}
	st.touchErr = nil
	for range 2 {
		if _, err := svc.Authenticate(ctx, tokens["a"]); err != nil {
			t.Fatal(err)
		}
	}
	got := st.written()
	if want := (map[string]time.Time{ids["a"]: clock.Now()}); len(got) != 3 || !maps.Equal(got[2], want) {
		t.Errorf("writes %v; want a's use written again after the failures, then once", got)
	}
}

// TestAuthenticateCacheAge: a credential is read from the store again once
// its cached copy is CacheTTL old, so that a deletion made behind the
// service's back (another process) takes effect by then.
func TestAuthenticateCacheAge(t *testing.T) {
	ctx := context.Background()
	st := &memStore{byHash: map[string]credential.Credential{}, keys: map[string][]byte{}}
	clock := coretest.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	svc := credential.NewService(credential.Deps{Store: st, Clock: clock})
	token, c, err := svc.Issue(ctx, credential.Supervisor, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, "jat_") || len(token) != len("jat_")+64 {
		t.Errorf("token %q, want jat_ and 256 bits in hex", token)
	}
	for range 3 {
		if _, err := svc.Authenticate(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	if st.lookups != 1 {
		t.Errorf("%d store look-ups for three requests within %s, want 1", st.lookups, credential.CacheTTL)
	}
	if err := st.DeleteCredential(ctx, c.ID); err != nil { // as another process would
		t.Fatal(err)
	}
	clock.Advance(credential.CacheTTL - time.Millisecond)
	if _, err := svc.Authenticate(ctx, token); err != nil {
		t.Errorf("within the cache age: %v, want the cached credential", err)
	}
	clock.Advance(time.Millisecond)
	if _, err := svc.Authenticate(ctx, token); !errors.Is(err, core.ErrUnauthorized) {
		t.Errorf("at the cache age: %v, want ErrUnauthorized", err)
	}
	for _, bad := range []string{"", "jat_", "Bearer " + token, token + "x", strings.TrimPrefix(token, "jat_")} {
		if _, err := svc.Authenticate(ctx, bad); !errors.Is(err, core.ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v, want ErrUnauthorized", bad, err)
		}
	}
}

// TestAttestationMessage pins the exact string a signature covers.
func TestAttestationMessage(t *testing.T) {
	got := credential.AttestationMessage("EVE", "seal-C-284-001", "sha256:5eal", "pass", "2026-04-17T00:00:00Z", "Reserve math\nchecks out.")
	want := "jarvis-attestation-v1\nEVE\nseal-C-284-001\nsha256:5eal\npass\n2026-04-17T00:00:00Z\nReserve math\nchecks out."
	if got != want {
		t.Errorf("AttestationMessage = %q, want %q", got, want)
	}
}

// BenchmarkAuthenticate measures the token check every API request makes
// once its credential is cached: hashing the token and finding it. `make
// bench` sets it beside the heartbeat's CPU per request.
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	st := &memStore{byHash: map[string]credential.Credential{}, keys: map[string][]byte{}}
	svc := credential.NewService(credential.Deps{Store: st, Clock: core.SystemClock{}})
	token, _, err := svc.Issue(ctx, credential.Supervisor, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.Authenticate(ctx, token); err != nil {
			b.Fatal(err)
		}
	}
}
