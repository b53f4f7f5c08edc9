package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/store"
)

// get answers a GET of url with the bearer token (none when empty): the
// status and the body.
func get(t *testing.T, url, bearer string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// refusedAtStart runs `jarvis run` on the configuration at cfgPath, which
// Jarvis must refuse before it does anything, and returns its exit code
// and what it printed.
func refusedAtStart(t *testing.T, cfgPath string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, jarvisBin, "run", "--config", cfgPath).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("jarvis run was not refused: %v\n%s", err, out)
	}
	return exit.ExitCode(), string(out)
}

// TestFilesArePrivate: the database Jarvis creates, its write-ahead log
// and its shared-memory index are its user's alone (0600); with the
// database, then the configuration file, made readable by everyone
// (0644), `jarvis run` refuses to start with exit code 6, naming the file
// and the chmod that fixes it, and the database is left as it was; once
// fixed, Jarvis starts and answers.
func TestFilesArePrivate(t *testing.T) {
	t.Parallel()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	files := j.Store.Files()
	for _, path := range files[:2] { // the database and its write-ahead log, open while Jarvis runs
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s is %#o while Jarvis runs, want 0600", filepath.Base(path), mode)
		}
	}
	j.Stop()

	contents := func() []byte {
		var all []byte
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	for _, tt := range []struct{ name, path string }{
		{"a world-readable database", files[0]},
		{"a world-readable configuration file", j.cfgPath},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.Chmod(tt.path, 0o644); err != nil {
				t.Fatal(err)
			}
			before := contents()
			code, out := refusedAtStart(t, j.cfgPath)
			if want := "run `chmod 600 " + tt.path + "`"; code != 6 || !strings.Contains(out, want) {
				t.Errorf("exit %d, %q; want 6 and %q", code, out, want)
			}
			if !bytes.Equal(contents(), before) {
				t.Error("the refused start changed the database")
			}
			if err := os.Chmod(tt.path, 0o600); err != nil {
				t.Fatal(err)
			}
		})
	}
	j.Start()
	if body := tesths.Body(j.ask(t, alice, room, "!ping")); !strings.Contains(body, "pong") {
		t.Errorf("after the fix, !ping got %q", body)
	}
}

// TestLogsHideSourceSecrets: a tripwire reads a url-fetch source whose URL
// carries a key in its query string, from a server that drops the
// connection; the fetch fails and is logged. Neither the log Jarvis writes
// nor `!sys logs` in the room shows the key, and `!sys logs` shows the
// lines in one fenced block naming the source's host and path.
func TestLogsHideSourceSecrets(t *testing.T) {
	t.Parallel()
	const secret = "S3CRET-api-key-0451"
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("sources:\n  url_fetch:\n    enabled: true\n    allowed_hosts: [%q]\n    timeout: 2s\ntripwires:\n  tick: 1s\n", srv.URL)})
	room := j.joinRoom(t, alice)
	source := srv.URL + "/price?api_key=" + secret
	if body := tesths.Body(j.ask(t, alice, room, `!tw arm url-fetch gt 5 --param "`+source+` data.v" --because "watch the price"`)); !strings.Contains(body, "Armed") {
		t.Fatalf("arming got %q", body)
	}
	var logs, formatted string
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs, "Failed to read a tripwire source") {
		if time.Now().After(deadline) {
			t.Fatalf("no failed fetch in !sys logs (%d fetches):\n%s", hits.Load(), logs)
		}
		time.Sleep(500 * time.Millisecond)
		reply := j.ask(t, alice, room, "!sys logs 50 warn")
		logs, formatted = tesths.Body(reply), reply.Content.AsMessage().FormattedBody
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if !strings.Contains(logs, host+"/price") || strings.Count(formatted, "<pre>") != 1 ||
		!strings.HasSuffix(strings.TrimSpace(formatted), "</code></pre>") {
		t.Errorf("!sys logs does not show the source's host and path in one block:\n%s\n%s", logs, formatted)
	}
	for what, text := range map[string]string{"!sys logs": logs, "the process's log": j.logs.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the source's key", what)
		}
	}
}

// TestCalendarFeedToken: the calendar feed takes the token `!tw token
// feed` makes and nothing else. The personal token, which arms and deletes
// tripwires, is refused on the feed (in the query and as a bearer); the
// feed token is refused on the tripwires' routes and deletes nothing;
// revoking it ends the feed and leaves the personal token working.
func TestCalendarFeedToken(t *testing.T) {
	t.Parallel()
	alice := newPerson(t, "alice")
	listen := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\n", listen, worker)})
	room := j.joinRoom(t, alice)
	base := "http://" + listen
	cardAPI{t: t, base: base}.waitUp()
	dm := j.directRoom(t, alice)
	personal := regexp.MustCompile(`jtw_[a-z2-7]+`).FindString(tesths.Body(j.ask(t, alice, dm, "!tw token laptop")))
	shown := tesths.Body(j.ask(t, alice, dm, "!tw token feed"))
	feed := regexp.MustCompile(`jcal_[a-z2-7]+`).FindString(shown)
	feedID := regexp.MustCompile(`cal_[a-z2-7]+`).FindString(strings.ReplaceAll(shown, feed, ""))
	if personal == "" || feed == "" || feedID == "" {
		t.Fatalf("tokens: personal %q, feed %q (ID %q)", personal, feed, feedID)
	}
	armed := tesths.Body(j.ask(t, alice, room, `!tw arm agent.status eq offline --param EVE --because "EVE runs the nightly build"`))
	tripwire := regexp.MustCompile(`tw_[a-z0-9_]+`).FindString(armed)
	if tripwire == "" {
		t.Fatalf("arming got %q", armed)
	}
	tripwires := func() string {
		t.Helper()
		code, body := get(t, base+"/api/tripwires", personal)
		if code != http.StatusOK {
			t.Fatalf("GET /api/tripwires with the personal token: %d %s", code, body)
		}
		return body
	}
	before := tripwires()

	for _, tt := range []struct {
		name, method, path, bearer string
	}{
		{"the personal token in the feed's URL", http.MethodGet, "/api/me/calendar.ics?token=" + personal, ""},
		{"the personal token as the feed's bearer", http.MethodGet, "/api/me/calendar.ics", personal},
		{"the feed token lists tripwires", http.MethodGet, "/api/tripwires", feed},
		{"the feed token deletes a tripwire", http.MethodDelete, "/api/tripwires/" + tripwire, feed},
	} {
		req, _ := http.NewRequest(tt.method, base+tt.path, nil)
		if tt.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+tt.bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", tt.name, resp.StatusCode)
		}
	}
	if after := tripwires(); after != before {
		t.Errorf("the tripwires changed:\n%s\nwere\n%s", after, before)
	}
	if code, body := get(t, base+"/api/me/calendar.ics?token="+feed, ""); code != http.StatusOK || !strings.HasPrefix(body, "BEGIN:VCALENDAR") {
		t.Errorf("the feed with its token: %d %q", code, body)
	}
	if body := tesths.Body(j.ask(t, alice, dm, "!tw token revoke "+feedID)); !strings.Contains(body, "Revoked") {
		t.Fatalf("revoking the feed token got %q", body)
	}
	if code, _ := get(t, base+"/api/me/calendar.ics?token="+feed, ""); code != http.StatusUnauthorized {
		t.Errorf("the revoked feed token: %d, want 401", code)
	}
	if after := tripwires(); after != before {
		t.Errorf("after the revocation the tripwires read:\n%s\nwere\n%s", after, before)
	}
}

// TestUnlistedBridgeIsBridged: with bridges.networks listing Telegram
// alone, a WhatsApp puppet writes in a room whose bridge state names
// WhatsApp. It is taken as bridged, not native: asking for a token there
// is refused as coming through a bridge, no token is made and no direct
// room opened for it; the admin in the same room is still herself.
func TestUnlistedBridgeIsBridged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: "bridges:\n  networks:\n    - name: telegram\n      users: \"@telegram_*\"\n"})
	j.joinRoom(t, alice)
	puppet, err := bridgeAS.Puppet(ctx, hs, tesths.RandomName("whatsapp_"))
	if err != nil {
		t.Fatal(err)
	}
	bridgeBot := id.NewUserID(bridgeAS.BotLocalpart, "localhost")
	created, err := alice.CreateRoom(ctx, &mautrix.ReqCreateRoom{
		Name: "WhatsApp chat", Preset: "private_chat", Invite: []id.UserID{j.UserID, puppet.UserID},
		InitialState: []*event.Event{
			{Type: event.StateBridge, StateKey: ptr(""), Content: event.Content{Raw: map[string]any{
				"bridgebot": bridgeBot.String(), "protocol": map[string]any{"id": "whatsapp", "displayname": "WhatsApp"},
				"channel": map[string]any{"id": "chat-1"}}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := puppet.JoinRoomByID(ctx, created.RoomID); err != nil {
		t.Fatal(err)
	}
	waitJoined(t, alice, created.RoomID, j.UserID)
	waitJoined(t, alice, created.RoomID, puppet.UserID)

	if body := tesths.Body(j.sayThrough(t, alice, puppet, created.RoomID, "!tw token")); !strings.Contains(body, "never through a bridge") {
		t.Errorf("the unlisted bridge's puppet asking for a token got %q", body)
	}
	if body := tesths.Body(j.ask(t, alice, created.RoomID, "!tw token")); !strings.Contains(body, "never in a shared room") {
		t.Errorf("the admin asking for a token in the same room got %q", body)
	}
	st := j.openStore(t)
	if toks, err := st.TripwireTokens().ListTokens(ctx, puppet.UserID.String()); err != nil || len(toks) != 0 {
		t.Errorf("the puppet holds tokens %v (%v)", toks, err)
	}
	if room, err := st.Outbox().DirectRoom(ctx, puppet.UserID.String()); err == nil {
		t.Errorf("a direct room %s was opened for the puppet", room)
	}
}

// TestMetricsNotOnAPIListen: without api.metrics_token, neither /metrics
// nor the Go profiles are served on api.listen; /metrics is on the
// loopback api.metrics_listen alone, and /healthz answers as before. A
// metrics listener on every address without a token, and profiling
// without one, are refused at start (exit code 2, naming the key).
func TestMetricsNotOnAPIListen(t *testing.T) {
	t.Parallel()
	alice := newPerson(t, "alice")
	listen, metricsListen := cardAPIListen(t), cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: %s\n  metrics_listen: %s\n", listen, metricsListen)})
	base := "http://" + listen
	cardAPI{t: t, base: base}.waitUp()
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/profile?seconds=1"} {
		if code, _ := get(t, base+path, ""); code != http.StatusNotFound {
			t.Errorf("GET %s on api.listen: %d, want 404", path, code)
		}
	}
	if code, body := get(t, "http://"+metricsListen+"/metrics", ""); code != http.StatusOK || !strings.Contains(body, "jarvis_http_requests_total") {
		t.Errorf("/metrics on the loopback api.metrics_listen: %d", code)
	}
	if code, _ := get(t, "http://"+metricsListen+"/debug/pprof/", ""); code != http.StatusNotFound {
		t.Errorf("the profiles on api.metrics_listen without a token: %d, want 404", code)
	}
	if code, body := get(t, base+"/healthz", ""); code != http.StatusOK || !strings.Contains(body, `"status":"ok"`) {
		t.Errorf("/healthz: %d %q", code, body)
	}

	text, err := os.ReadFile(j.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, api, key string }{
		{"a metrics listener on every address", fmt.Sprintf("api:\n  listen: %s\n  metrics_listen: 0.0.0.0:9464\n", listen), "api.metrics_listen"},
		{"profiling without a token", fmt.Sprintf("api:\n  listen: %s\n  profiling: true\n", listen), "api.profiling"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfgPath := filepath.Join(t.TempDir(), "config.yaml")
			cfg := strings.Replace(string(text), fmt.Sprintf("api:\n  listen: %s\n  metrics_listen: %s\n", listen, metricsListen), tt.api, 1)
			if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			if code, out := refusedAtStart(t, cfgPath); code != 2 || !strings.Contains(out, tt.key) {
				t.Errorf("exit %d, %q; want 2 naming %s", code, out, tt.key)
			}
		})
	}
}

// TestNoHomeserverAnswers: in a workspace with no homeserver, the console
// serves the agents' API. An approval request naming an approver (which
// asked a bridge policy that was never built, and dropped the connection)
// is answered: created for an allowed approver, refused naming the field
// for one Jarvis does not talk to, with nothing stored; `!sys status`
// answers with every section.
func TestNoHomeserverAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := cardAPIListen(t)
	db := testdb.NewConfig(t, store.SQLite)
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("homeserver:\n  url: \"\"\nbot:\n  allowed_users: [\"@*:localhost\"]\nstore:\n  uri: %s\napi:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\n      cadence: 1h\n"+
		// Both may be named; only bob is someone Jarvis talks to.
		"approvals:\n  approvers: [\"@bob:localhost\", \"@eve:elsewhere.org\"]\n",
		db.URI, addr, worker)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	j := &jarvis{t: t, cfgPath: cfgPath, Store: db}
	api := cardAPI{t: t, base: "http://" + addr, tokens: j.issueTokens(t, worker)}
	c := openConsole(t, cfgPath)
	api.waitUp()
	c.waitFor("lease: this console")

	var created struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Approver string `json:"approver"`
	}
	api.call(http.MethodPost, "/api/approvals", map[string]string{"Idempotency-Key": "migrate-1"}, map[string]any{
		"action": "migrate the billing database", "reason": "the new schema", "approver": "@bob:localhost",
	}, http.StatusCreated, &created)
	if created.Status != "pending" || created.Approver != "@bob:localhost" {
		t.Errorf("the request reads %+v, want pending for @bob:localhost", created)
	}
	var refused struct {
		Field string `json:"field"`
	}
	api.call(http.MethodPost, "/api/approvals", map[string]string{"Idempotency-Key": "migrate-2"}, map[string]any{
		"action": "drop the billing database", "reason": "cleanup", "approver": "@eve:elsewhere.org",
	}, http.StatusBadRequest, &refused)
	if refused.Field != "approver" {
		t.Errorf("the refusal names %q, want approver", refused.Field)
	}
	var stored int
	if err := j.openStore(t).DB.QueryRow(context.Background(), "SELECT COUNT(*) FROM approval").Scan(&stored); err != nil || stored != 1 {
		t.Errorf("%d requests stored (%v), want the one created", stored, err)
	}
	out, err := exec.Command(jarvisBin, "console", "--config", cfgPath, "-x", "!sys status").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "this workspace is used from the console alone") || !strings.Contains(string(out), "Outbox") {
		t.Errorf("-x '!sys status': %v, %q; want exit 0 and the status", err, out)
	}
}
