package credential_test

import (
	"context"
	"errors"
	"strings"
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

func (m *memStore) TouchCredential(context.Context, string, time.Time) error { return nil }

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
