package sources_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/sources"
)

// fakeDNS answers names from a table, as a resolver an attacker controls
// would: any name may point anywhere.
func fakeDNS(names map[string]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		addr, ok := names[host]
		if !ok {
			return nil, fmt.Errorf("lookup %s on 10.0.0.53:53: no such host", host)
		}
		return []netip.Addr{netip.MustParseAddr(addr)}, nil
	}
}

// urlFetch registers url-fetch with the given allowlist, resolver and TLS
// roots and returns its kind.
func urlFetch(t *testing.T, allowed []string, lookup func(context.Context, string) ([]netip.Addr, error), roots *x509.CertPool) core.SourceKind {
	t.Helper()
	cfg := exampleConfig()
	cfg.URLFetch = sources.FetchConfig{Enabled: true, AllowedHosts: allowed, Timeout: 2 * time.Second, MaxBytes: 1024}
	reg := core.NewSourceRegistry()
	if err := sources.RegisterWith(reg, cfg, lookup, roots); err != nil {
		t.Fatalf("Register() = %v", err)
	}
	kind, _ := reg.Lookup("url-fetch")
	return kind
}

// citizenSees is what the tripwire's owner reads of a source error, as
// last_error and the quarantine notice carry it.
func citizenSees(t *testing.T, err error) string {
	t.Helper()
	text := err.Error()
	for _, leak := range []string{"http", "://", "example.org", "127.0.0.1", "169.254", "10.0.0", "lookup", "dial"} {
		if strings.Contains(text, leak) {
			t.Errorf("the owner would read %q, which shows %q", text, leak)
		}
	}
	return text
}

// TestURLFetchCannotBePointedInside: names on the allowlist that resolve
// to loopback, private, link-local (cloud metadata) or IPv4-mapped
// loopback addresses are refused when the connection is made, whatever
// the name; so is a redirect that leads there. The owner is told "source
// unavailable: address not allowed" and never the URL or the resolver's
// text; the server inside is never reached.
func TestURLFetchCannotBePointedInside(t *testing.T) {
	var hits atomic.Int32
	inside := serve(t, map[string]string{"/status.json": `{"gi": 1}`}, &hits)
	port := inside.URL[strings.LastIndex(inside.URL, ":")+1:]
	dns := fakeDNS(map[string]string{
		"status.example.org": "127.0.0.1",
		"mapped.example.org": "::ffff:127.0.0.1",
		"v6.example.org":     "::1",
		"meta.example.org":   "169.254.169.254",
		"lan.example.org":    "10.0.0.7",
	})
	// The allowed server redirects wherever it is told to: it is on the
	// allowlist by its own address.
	allowed := []string{inside.URL, "http://*.example.org:" + port, "http://meta.example.org"}
	for _, tt := range []struct {
		name, url string
		lookup    func(context.Context, string) ([]netip.Addr, error)
	}{
		{name: "a name resolving to loopback", url: "http://status.example.org:" + port + "/status.json", lookup: dns},
		{name: "a name resolving to IPv4-mapped loopback", url: "http://mapped.example.org:" + port + "/status.json", lookup: dns},
		{name: "a name resolving to IPv6 loopback", url: "http://v6.example.org:" + port + "/status.json", lookup: dns},
		{name: "a name resolving to a private address", url: "http://lan.example.org:" + port + "/status.json", lookup: dns},
		{name: "a name resolving to the cloud metadata address", url: "http://meta.example.org/latest/meta-data", lookup: dns},
		{name: "localhost, from the system's resolver", url: "http://localhost:" + port + "/status.json"},
		{name: "a redirect to a name resolving to loopback", lookup: dns,
			url: inside.URL + "/redirect?to=http://status.example.org:" + port + "/status.json"},
		{name: "a redirect to the cloud metadata address", lookup: dns,
			url: inside.URL + "/redirect?to=http://meta.example.org/latest/meta-data"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			allowed := allowed
			if tt.lookup == nil {
				allowed = append(allowed, "http://localhost:"+port)
			}
			kind := urlFetch(t, allowed, tt.lookup, nil)
			param := tt.url + " gi"
			if err := kind.CheckParam(param); err != nil {
				t.Fatalf("CheckParam() = %v; the URL is allowed by name", err)
			}
			before := hits.Load()
			_, err := kind.Resolve(context.Background(), param)
			errReads(t, err, "source unavailable: address not allowed", "not a public address")
			citizenSees(t, err)
			redirects := int32(strings.Count(tt.url, "/redirect"))
			if n := hits.Load() - before; n != redirects {
				t.Errorf("the server inside was reached %d times, want %d (only the allowed redirect)", n, redirects)
			}
		})
	}
}

// TestURLFetchAllowlist: what the allowlist does not name is refused when
// the tripwire is armed, with an error naming what is wrong: an address
// not named (private, metadata), a port not named, http for an https
// entry.
func TestURLFetchAllowlist(t *testing.T) {
	kind := urlFetch(t, []string{"status.example.org", "http://feeds.example.org", "*.example.net:8443", "http://10.0.0.7:8080"}, nil, nil)
	for _, tt := range []struct {
		name, url, wantErr string
	}{
		{name: "https on the default port", url: "https://status.example.org/api.json"},
		{name: "an explicit default port", url: "https://status.example.org:443/api.json"},
		{name: "http for an http:// entry", url: "http://feeds.example.org/feed.xml"},
		{name: "a subdomain on its port", url: "https://a.b.example.net:8443/x"},
		{name: "a private address the list names", url: "http://10.0.0.7:8080/x"},
		{name: "a private address", url: "http://10.0.0.8:8080/x", wantErr: "host 10.0.0.8:8080 is not in the allowed hosts"},
		{name: "the metadata address", url: "http://169.254.169.254/latest/meta-data", wantErr: "host 169.254.169.254 is not in the allowed hosts"},
		{name: "a port not named", url: "https://status.example.org:8443/api.json",
			wantErr: "https://status.example.org:8443 is not in the allowed hosts, which have status.example.org only as https://status.example.org:443"},
		{name: "http for an https entry", url: "http://status.example.org/api.json",
			wantErr: "http://status.example.org:80 is not in the allowed hosts"},
		{name: "https for an http:// entry", url: "https://feeds.example.org/feed.xml",
			wantErr: "https://feeds.example.org:443 is not in the allowed hosts"},
		{name: "a subdomain on the default port", url: "https://a.example.net/x", wantErr: "not in the allowed hosts"},
		{name: "the wildcard's own domain", url: "https://example.net:8443/x", wantErr: "host example.net:8443 is not in the allowed hosts"},
		{name: "the named address on another port", url: "http://10.0.0.7:8081/x", wantErr: "not in the allowed hosts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := kind.CheckParam(tt.url + " data.gi")
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckParam() = %v, want allowed", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckParam() = %v, want an error saying %q", err, tt.wantErr)
			}
		})
	}
}

// TestURLFetchNoRedirectToHTTP: an https source that redirects to plain
// http is refused, even to an address the allowlist names with http; the
// plain server is never asked.
func TestURLFetchNoRedirectToHTTP(t *testing.T) {
	var plainHits atomic.Int32
	plain := serve(t, map[string]string{"/status.json": `{"gi": 1}`}, &plainHits)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/status.json" {
			fmt.Fprint(w, `{"gi": 0.5}`)
			return
		}
		http.Redirect(w, r, plain.URL+"/status.json", http.StatusFound)
	}))
	t.Cleanup(secure.Close)
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	kind := urlFetch(t, []string{strings.TrimPrefix(secure.URL, "https://"), plain.URL}, nil, roots)

	// The https server itself is fetched (its address is named).
	if obs, err := kind.Resolve(context.Background(), secure.URL+"/status.json gi"); err != nil || obs.Value != 0.5 {
		t.Fatalf("Resolve(https) = %v, %v; want 0.5", obs.Value, err)
	}
	_, err := kind.Resolve(context.Background(), secure.URL+"/moved gi")
	errReads(t, err, "source unavailable: redirect not allowed", "from https to http")
	citizenSees(t, err)
	if n := plainHits.Load(); n != 0 {
		t.Errorf("the plain http server was asked %d times after a redirect from https, want never", n)
	}
}

// TestURLFetchErrorsTellOnlyTheReason: a timeout, a name that does not
// resolve and a bad answer reach the owner as their reason class alone.
func TestURLFetchErrorsTellOnlyTheReason(t *testing.T) {
	slow := hanging(t)
	var hits atomic.Int32
	broken := serve(t, map[string]string{}, &hits)
	cfg := exampleConfig()
	cfg.URLFetch = sources.FetchConfig{Enabled: true, AllowedHosts: []string{slow.URL, broken.URL, "http://gone.example.org"},
		Timeout: 100 * time.Millisecond, MaxBytes: 1024}
	reg := core.NewSourceRegistry()
	if err := sources.RegisterWith(reg, cfg, fakeDNS(nil), nil); err != nil {
		t.Fatal(err)
	}
	kind, _ := reg.Lookup("url-fetch")
	for _, tt := range []struct{ name, url, want, detail string }{
		{name: "timed out", url: slow.URL + "/slow", want: "source unavailable: timed out", detail: "Timeout"},
		{name: "no such host", url: "http://gone.example.org/x", want: "source unavailable: unreachable", detail: "no such host"},
		{name: "an error answer", url: broken.URL + "/missing", want: "source unavailable: bad response", detail: "404"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kind.Resolve(context.Background(), tt.url+" gi")
			errReads(t, err, tt.want, tt.detail)
			citizenSees(t, err)
		})
	}
}

// TestURLFetchLogsNoSecrets: a source's URL carrying a key in its query
// string and a password in its userinfo fails (a timeout, whose error is
// the HTTP client's, and an error answer): the log names the URL's host and
// path, and neither secret.
func TestURLFetchLogsNoSecrets(t *testing.T) {
	slow := hanging(t)
	var hits atomic.Int32
	broken := serve(t, map[string]string{}, &hits)
	cfg := exampleConfig()
	cfg.URLFetch = sources.FetchConfig{Enabled: true, AllowedHosts: []string{slow.URL, broken.URL},
		Timeout: 100 * time.Millisecond, MaxBytes: 1024}
	reg := core.NewSourceRegistry()
	if err := sources.RegisterWith(reg, cfg, fakeDNS(nil), nil); err != nil {
		t.Fatal(err)
	}
	kind, _ := reg.Lookup("url-fetch")
	for _, tt := range []struct{ name, base string }{
		{name: "timed out", base: slow.URL},
		{name: "an error answer", base: broken.URL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logged strings.Builder
			ctx := zerolog.New(&logged).WithContext(context.Background())
			u := strings.Replace(tt.base, "://", "://bob:hunter22@", 1) + "/v1/price?api_key=k3y-v4lue&sym=X"
			if _, err := kind.Resolve(ctx, u+" gi"); err == nil {
				t.Fatal("the fetch did not fail")
			}
			line := logged.String()
			if !strings.Contains(line, strings.TrimPrefix(tt.base, "http://")+"/v1/price") {
				t.Errorf("the log does not name the source: %s", line)
			}
			for _, secret := range []string{"k3y-v4lue", "hunter22", "api_key", "sym=X"} {
				if strings.Contains(line, secret) {
					t.Errorf("the log shows %q: %s", secret, line)
				}
			}
		})
	}
}

func TestPublicAddress(t *testing.T) {
	for _, tt := range []struct {
		ip     string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},  // 6to4 of 8.8.8.8
		{"127.0.0.1", false},
		{"127.255.0.9", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"224.0.0.1", false},
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"::", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::127.0.0.1", false},
		{"fe80::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"ff02::1", false},
		{"fec0::1", false},
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", false},    // NAT64 of 127.0.0.1
		{"2002:7f00:1::1", false},     // 6to4 of 127.0.0.1
		{"2001::1", false},            // Teredo
		{"2001:db8::1", false},
	} {
		if got := sources.PublicAddress(netip.MustParseAddr(tt.ip)); got != tt.public {
			t.Errorf("publicAddress(%s) = %v, want %v", tt.ip, got, tt.public)
		}
	}
}

func TestAllowlistEntriesAreChecked(t *testing.T) {
	for _, tt := range []struct {
		entry string
		ok    bool
	}{
		{"status.example.org", true},
		{"status.example.org.", true},
		{"http://status.example.org:8080", true},
		{"https://[::1]:8443", true},
		{"*.example.org", true},
		{"127.0.0.1", true},
		{"ftp://status.example.org", false},
		{"status.example.org/path", false},
		{"user@status.example.org", false},
		{"status.example.org:99999", false},
		{"status.example.org:http", false},
		{"*", false},
		{"*.*.example.org", false},
		{"", false},
	} {
		cfg := exampleConfig()
		cfg.URLFetch = sources.FetchConfig{Enabled: true, AllowedHosts: []string{tt.entry}, Timeout: time.Second, MaxBytes: 1024}
		err := cfg.Validate()
		var fe *core.FieldError
		switch {
		case tt.ok && err != nil:
			t.Errorf("allowed_hosts [%q]: %v, want accepted", tt.entry, err)
		case !tt.ok && (!errors.As(err, &fe) || fe.Field != "sources.url_fetch.allowed_hosts[0]"):
			t.Errorf("allowed_hosts [%q]: %v, want an error naming sources.url_fetch.allowed_hosts[0]", tt.entry, err)
		}
	}
}
