package sources_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/sources"
)

const snapshotJSON = `{
	"vault": {"balance": 46.5},
	"integrity": {"gi": 0.68},
	"micro_agents": {"DAEDALUS-µ5": {"value": 0.74}, "odd.name": {"value": 1}},
	"lanes": {"sentiment": "degraded", "market": null, "list": [1, 2]}
}`

// exampleConfig is the sources section as config.example.yaml gives it: the
// seed's three snapshot kinds (no URL, so off until one is set), url-fetch
// and rss off.
func exampleConfig() sources.Config {
	return sources.Config{
		Snapshot: sources.SnapshotConfig{
			Timeout: 10 * time.Second, MaxBytes: 1 << 20,
			Kinds: []sources.SnapshotKind{
				{Kind: "vault.balance", Path: "vault.balance", Aliases: []string{"vault", "vault balance"},
					Description: "the vault balance", Value: core.ValueNumber},
				{Kind: "integrity.gi", Path: "integrity.gi", Aliases: []string{"GI", "global integrity", "integrity"},
					Description: "the global integrity index (0–1)", Value: core.ValueRatio},
				{Kind: "micro-agent.value", Path: "micro_agents.{param}.value", Aliases: []string{"micro-agent", "micro agent"},
					Description: "a micro-agent's self-reported value", Value: core.ValueNumber},
			},
		},
		URLFetch:      sources.FetchConfig{Timeout: 10 * time.Second, MaxBytes: 256 << 10},
		RSS:           sources.FetchConfig{Timeout: 10 * time.Second, MaxBytes: 1 << 20},
		MaxValueBytes: 512,
	}
}

// serve starts a loopback server answering path with body; hits counts requests.
func serve(t *testing.T, routes map[string]string, hits *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
			return
		}
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/snapshot" && r.Header.Get("Authorization") != "Bearer snap-token" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func registry(t *testing.T, cfg sources.Config) *core.SourceRegistry {
	t.Helper()
	reg := core.NewSourceRegistry()
	if err := sources.Register(reg, cfg); err != nil {
		t.Fatalf("Register() = %v", err)
	}
	return reg
}

func resolve(ctx context.Context, reg *core.SourceRegistry, kind, param string) (core.Observation, error) {
	k, ok := reg.Lookup(kind)
	if !ok {
		return core.Observation{}, fmt.Errorf("kind %s not registered", kind)
	}
	return k.Resolve(ctx, param)
}

func TestSnapshotKinds(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, map[string]string{"/snapshot": snapshotJSON}, &hits)
	cfg := exampleConfig()
	cfg.Snapshot.URL, cfg.Snapshot.Token = srv.URL+"/snapshot", "snap-token"
	cfg.Snapshot.Kinds = append(cfg.Snapshot.Kinds,
		sources.SnapshotKind{Kind: "lane.status", Path: "lanes.{param}"})
	reg := registry(t, cfg)
	ctx := core.WithMemo(context.Background())
	for _, tt := range []struct {
		name, kind, param string
		want              any
		wantErr           string
	}{
		{name: "vault balance", kind: "vault.balance", want: 46.5},
		{name: "GI", kind: "integrity.gi", want: 0.68},
		{name: "micro-agent by name", kind: "micro-agent.value", param: "DAEDALUS-µ5", want: 0.74},
		{name: "a param with a dot is one key", kind: "micro-agent.value", param: "odd.name", want: 1.0},
		{name: "a string", kind: "lane.status", param: "sentiment", want: "degraded"},
		{name: "unknown micro-agent", kind: "micro-agent.value", param: "HERMES", wantErr: "nothing at"},
		{name: "null", kind: "lane.status", param: "market", wantErr: "is null"},
		{name: "a list is not a value", kind: "lane.status", param: "list", wantErr: "not a value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs, err := resolve(ctx, reg, tt.kind, tt.param)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("resolve() = %v, %v; want an error saying %q", obs.Value, err, tt.wantErr)
				}
				return
			}
			if err != nil || obs.Value != tt.want {
				t.Errorf("resolve() = %v, %v; want %v", obs.Value, err, tt.want)
			}
		})
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the snapshot was fetched %d times in one pass, want once", n)
	}
	if k, _ := reg.Match("global integrity"); k.Kind != "integrity.gi" {
		t.Errorf("alias %q matches %q, want integrity.gi", "global integrity", k.Kind)
	}
	if k, _ := reg.Lookup("micro-agent.value"); k.Param == "" {
		t.Error("micro-agent.value takes no param; want one (its path holds {param})")
	}
}

// errReads checks that err reads want, what a tripwire's owner is shown,
// and, when detail is not empty, that err is a core.SourceUnavailable
// whose detail, for the log, says detail.
func errReads(t *testing.T, err error, want, detail string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one reading %q", err, want)
		return
	}
	if detail == "" {
		return
	}
	var unavailable *core.SourceUnavailable
	if !errors.As(err, &unavailable) || !strings.Contains(unavailable.Detail.Error(), detail) {
		t.Errorf("error %v has detail %v, want one saying %q", err, unavailable, detail)
	}
}

func TestSnapshotFailures(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, map[string]string{"/snapshot": snapshotJSON, "/html": "<html>", "/big": strings.Repeat("x", 2000)}, &hits)
	for _, tt := range []struct {
		name, path, token, wantErr, wantDetail string
		maxBytes                               int64
	}{
		{name: "wrong token", path: "/snapshot", token: "nope", wantErr: "source unavailable: bad response", wantDetail: "401"},
		{name: "not JSON", path: "/html", token: "snap-token", wantErr: "not JSON"},
		{name: "too large", path: "/big", token: "snap-token", maxBytes: 1000, wantErr: "source unavailable: response too large",
			wantDetail: "more than 1000 bytes"},
		{name: "missing", path: "/gone", token: "snap-token", wantErr: "source unavailable: bad response", wantDetail: "404"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := exampleConfig()
			cfg.Snapshot.URL, cfg.Snapshot.Token = srv.URL+tt.path, tt.token
			if tt.maxBytes > 0 {
				cfg.Snapshot.MaxBytes = tt.maxBytes
			}
			_, err := resolve(context.Background(), registry(t, cfg), "integrity.gi", "")
			errReads(t, err, tt.wantErr, tt.wantDetail)
			if err != nil && strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error %q shows the snapshot's URL", err)
			}
		})
	}
}

// hanging starts a loopback server that never answers, until the test
// ends.
func hanging(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv
}

func TestSnapshotTimeout(t *testing.T) {
	srv := hanging(t)
	cfg := exampleConfig()
	cfg.Snapshot.URL, cfg.Snapshot.Timeout = srv.URL, 50*time.Millisecond
	_, err := resolve(context.Background(), registry(t, cfg), "integrity.gi", "")
	errReads(t, err, "source unavailable: timed out", "Timeout")
}

func TestURLFetch(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, map[string]string{"/status.json": `{"data": {"gi": 0.91, "state": "green"}}`}, &hits)
	other := serve(t, map[string]string{"/status.json": `{"data": {"gi": 0.1}}`}, &hits)
	cfg := exampleConfig()
	// The test server's address is not public: the entry names it.
	cfg.URLFetch = sources.FetchConfig{Enabled: true, AllowedHosts: []string{srv.URL}, Timeout: time.Second, MaxBytes: 1024}
	reg := registry(t, cfg)
	kind, _ := reg.Lookup("url-fetch")
	ctx := core.WithMemo(context.Background())
	for _, tt := range []struct {
		name, param string
		want        any
		wantCheck   bool // CheckParam refuses it when arming
		wantErr     string
		wantDetail  string
	}{
		{name: "a number", param: srv.URL + "/status.json data.gi", want: 0.91},
		{name: "a string from the same URL", param: srv.URL + "/status.json data.state", want: "green"},
		{name: "no path", param: srv.URL + "/status.json", wantCheck: true},
		{name: "not a URL", param: "status.json data.gi", wantCheck: true},
		{name: "ftp", param: "ftp://" + strings.TrimPrefix(srv.URL, "http://") + "/x data", wantCheck: true},
		{name: "a host not allowed", param: other.URL + "/status.json data.gi", wantCheck: true},
		{name: "a redirect to a host not allowed", param: srv.URL + "/redirect?to=" + other.URL + "/status.json data.gi",
			wantErr: "source unavailable: redirect not allowed", wantDetail: "not in the allowed hosts"},
		{name: "a missing path", param: srv.URL + "/status.json data.mii", wantErr: "nothing at data.mii"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := kind.CheckParam(tt.param); (err != nil) != tt.wantCheck {
				t.Fatalf("CheckParam() = %v, want refused %v", err, tt.wantCheck)
			}
			if tt.wantCheck {
				return
			}
			obs, err := kind.Resolve(ctx, tt.param)
			if tt.wantErr != "" {
				errReads(t, err, tt.wantErr, tt.wantDetail)
				return
			}
			if err != nil || obs.Value != tt.want {
				t.Errorf("Resolve() = %v, %v; want %v", obs.Value, err, tt.want)
			}
		})
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("%d requests, want 2: the URL once for both paths, and the redirect it refused to follow", n)
	}
}

const feedXML = `<?xml version="1.0"?>
<rss version="2.0"><channel><title>Status</title>
<item><guid>post-3</guid><title>All clear</title><pubDate>Wed, 07 Jan 2026 10:00:00 GMT</pubDate></item>
<item><guid>post-2</guid><title>Outage in eu-west</title><link>https://status.example.org/2</link><pubDate>Tue, 06 Jan 2026 10:00:00 GMT</pubDate></item>
<item><guid>post-1</guid><title>Minor outage</title><pubDate>Mon, 05 Jan 2026 10:00:00 GMT</pubDate></item>
</channel></rss>`

func TestRSS(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, map[string]string{"/feed.xml": feedXML, "/broken.xml": "<rss><channel"}, &hits)
	cfg := exampleConfig()
	cfg.RSS = sources.FetchConfig{Enabled: true, AllowedHosts: []string{srv.URL}, Timeout: time.Second, MaxBytes: 1 << 16}
	reg := registry(t, cfg)
	kind, _ := reg.Lookup("rss")
	ctx := core.WithMemo(context.Background())
	for _, tt := range []struct {
		name, param string
		want        string
		wantErr     bool
	}{
		{name: "the newest matching item", param: srv.URL + "/feed.xml OUTAGE", want: "post-2"},
		{name: "a keyword of two words", param: srv.URL + "/feed.xml all clear", want: "post-3"},
		{name: "no match", param: srv.URL + "/feed.xml volcano", want: ""},
		{name: "not a feed", param: srv.URL + "/broken.xml outage", wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs, err := kind.Resolve(ctx, tt.param)
			if (err != nil) != tt.wantErr || (!tt.wantErr && obs.Value != tt.want) {
				t.Errorf("Resolve() = %v, %v; want %q (error %v)", obs.Value, err, tt.want, tt.wantErr)
			}
		})
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("%d requests, want each feed fetched once", n)
	}
	if err := kind.CheckParam(srv.URL + "/feed.xml"); err == nil {
		t.Error("a feed without a keyword was accepted")
	}
}

// TestRSSNewItemChangesTheValue checks what a changed tripwire on a feed
// fires on: the value moves to a new matching item when one appears.
func TestRSSNewItemChangesTheValue(t *testing.T) {
	var feed atomic.Pointer[string]
	body := feedXML
	feed.Store(&body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, *feed.Load()) }))
	defer srv.Close()
	cfg := exampleConfig()
	cfg.RSS = sources.FetchConfig{Enabled: true, AllowedHosts: []string{srv.URL}, Timeout: time.Second, MaxBytes: 1 << 16}
	reg := registry(t, cfg)
	kind, _ := reg.Lookup("rss")
	param := srv.URL + "/feed.xml outage"
	first, err := kind.Resolve(core.WithMemo(context.Background()), param)
	if err != nil {
		t.Fatal(err)
	}
	newer := strings.Replace(feedXML, "<item><guid>post-3</guid>",
		`<item><guid>post-4</guid><title>Outage in us-east</title><pubDate>Thu, 08 Jan 2026 10:00:00 GMT</pubDate></item><item><guid>post-3</guid>`, 1)
	feed.Store(&newer)
	second, err := kind.Resolve(core.WithMemo(context.Background()), param)
	if err != nil {
		t.Fatal(err)
	}
	if first.Value == second.Value || second.Value != "post-4" || second.Context["title"] != "Outage in us-east" {
		t.Errorf("values %v then %v (%v); want a change to the new item post-4", first.Value, second.Value, second.Context)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name      string
		edit      func(c *sources.Config)
		wantField string
	}{
		{name: "defaults", edit: func(*sources.Config) {}},
		{name: "snapshot URL not http", edit: func(c *sources.Config) { c.Snapshot.URL = "file:///etc/passwd" }, wantField: "sources.snapshot.url"},
		{name: "snapshot timeout zero", edit: func(c *sources.Config) { c.Snapshot.Timeout = 0 }, wantField: "sources.snapshot.timeout"},
		{name: "kind listed twice", edit: func(c *sources.Config) { c.Snapshot.Kinds = append(c.Snapshot.Kinds, c.Snapshot.Kinds[0]) }, wantField: "sources.snapshot.kinds[3].kind"},
		{name: "kind without path", edit: func(c *sources.Config) { c.Snapshot.Kinds[1].Path = "" }, wantField: "sources.snapshot.kinds[1].path"},
		{name: "unknown value type", edit: func(c *sources.Config) { c.Snapshot.Kinds[0].Value = "money" }, wantField: "sources.snapshot.kinds[0].value"},
		{name: "category without categories", edit: func(c *sources.Config) { c.Snapshot.Kinds[0].Value = core.ValueCategory }, wantField: "sources.snapshot.kinds[0].categories"},
		{name: "categories of a number", edit: func(c *sources.Config) { c.Snapshot.Kinds[0].Categories = []string{"low"} }, wantField: "sources.snapshot.kinds[0].categories"},
		{name: "url-fetch without allowed hosts", edit: func(c *sources.Config) { c.URLFetch.Enabled = true }, wantField: "sources.url_fetch.allowed_hosts"},
		{name: "rss too large a limit", edit: func(c *sources.Config) {
			c.RSS = sources.FetchConfig{Enabled: true, AllowedHosts: []string{"x"}, Timeout: time.Second, MaxBytes: 1 << 30}
		}, wantField: "sources.rss.max_bytes"},
		{name: "values capped too short", edit: func(c *sources.Config) { c.MaxValueBytes = 10 }, wantField: "sources.max_value_bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := exampleConfig()
			tt.edit(&c)
			err := c.Validate()
			var fe *core.FieldError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("Validate() = %v, want ok", err)
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField):
				t.Errorf("Validate() = %v, want an error naming %s", err, tt.wantField)
			}
		})
	}
}
