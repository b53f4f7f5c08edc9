package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// alertmanagerConfig is Alertmanager's configuration with Jarvis as its
// webhook receiver, as docs/operating.md shows it; the test's waits are
// short. %[1]s is Jarvis's API, %[2]s the receiver token.
const alertmanagerConfig = `route:
  receiver: jarvis
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 4h
receivers:
  - name: jarvis
    webhook_configs:
      - url: %[1]s/api/alertmanager
        send_resolved: true
        max_alerts: 50
        http_config:
          authorization:
            credentials: %[2]s
`

// startAlertmanager builds (once) and starts the real Alertmanager with
// Jarvis at base as its receiver, and returns its API's address.
func startAlertmanager(t *testing.T, base, token string) string {
	t.Helper()
	root, err := tesths.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "scripts", "alertmanager.sh"), "path").Output()
	if err != nil {
		t.Fatalf("build Alertmanager: %v", err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(alertmanagerConfig, base, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	cmd := exec.Command(strings.TrimSpace(string(out)), "--config.file="+config, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen, "--cluster.listen-address=")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("Alertmanager's log:\n%s", logs.String())
		}
	})
	url := "http://" + listen
	for deadline := time.Now().Add(20 * time.Second); ; {
		if resp, err := http.Get(url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Alertmanager did not answer on %s:\n%s", url, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// postAlerts sends alerts to Alertmanager's own API, as Prometheus does;
// an alert whose end has passed is resolved.
func postAlerts(t *testing.T, url string, ends time.Time, alerts ...map[string]string) {
	t.Helper()
	var body []map[string]any
	for _, labels := range alerts {
		body = append(body, map[string]any{"labels": labels, "endsAt": ends.UTC().Format(time.RFC3339Nano),
			"annotations": map[string]string{"summary": labels["alertname"] + " on " + labels["instance"]}})
	}
	data, _ := json.Marshal(body)
	resp, err := http.Post(url+"/api/v2/alerts", "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Alertmanager answered %d to the alerts", resp.StatusCode)
	}
}

// TestAlertmanagerGroupsInTheRoom: the real Alertmanager, with Jarvis as
// its webhook receiver, fires two alerts in one group and one in another:
// the room shows one alert per group, with 👀. bob claims one; all three
// end in Alertmanager, and each group's alert is edited to resolved with
// one reply in its thread. The room holds exactly two top-level messages
// from Alertmanager's alerts.
func TestAlertmanagerGroupsInTheRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, room, alice, bob, jarvisAPI := onCallRoom(t, "")
	token := j.issueToken(t, "receiver", "")
	am := startAlertmanager(t, jarvisAPI.base, token)

	postAlerts(t, am, time.Now().Add(time.Hour),
		map[string]string{"alertname": "DiskFull", "instance": "db-1", "severity": "critical"},
		map[string]string{"alertname": "DiskFull", "instance": "db-2", "severity": "critical"},
		map[string]string{"alertname": "CPUHot", "instance": "web-1", "severity": "warning"})

	topLevel := func(name string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo == nil &&
				strings.Contains(tesths.Body(evt), "Alertmanager: "+name)
		}
	}
	disk, err := alice.WaitFor(ctx, waitReply, topLevel("DiskFull"))
	if err != nil {
		t.Fatalf("no alert for the DiskFull group: %v", err)
	}
	cpu, err := alice.WaitFor(ctx, waitReply, topLevel("CPUHot"))
	if err != nil {
		t.Fatalf("no alert for the CPUHot group: %v", err)
	}
	// Both of DiskFull's alerts are in its one message, at once or after an edit.
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		body := tesths.Body(evt)
		if evt.ID != disk.ID {
			if !editOf(j.UserID, disk.ID)(evt) {
				return false
			}
			body = newBody(evt)
		}
		return strings.Contains(body, "2 alerts firing") && strings.Contains(body, "db-1") && strings.Contains(body, "db-2")
	}); err != nil {
		t.Fatalf("the DiskFull alert never named both instances: %v", err)
	}
	if msg := disk.Content.AsMessage(); msg.Mentions == nil || len(msg.Mentions.UserIDs) != 1 || msg.Mentions.UserIDs[0] != alice.UserID {
		t.Errorf("the critical alert mentions %+v, want alice, the admin", msg.Mentions)
	}
	if msg := cpu.Content.AsMessage(); msg.Mentions != nil && len(msg.Mentions.UserIDs) > 0 {
		t.Errorf("the warning alert mentions %+v, want nobody", msg.Mentions.UserIDs)
	}
	if _, err := bob.WaitFor(ctx, waitReply, reactionBy(j.UserID, disk.ID, "👀")); err != nil {
		t.Fatalf("no 👀 from Jarvis on the DiskFull alert: %v", err)
	}
	if _, err := bob.SendReaction(ctx, room, disk.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return editOf(j.UserID, disk.ID)(evt) && strings.Contains(newBody(evt), "👀 Handled by "+bob.UserID.String())
	}); err != nil {
		t.Fatalf("bob's 👀 did not claim the DiskFull alert: %v", err)
	}

	postAlerts(t, am, time.Now(),
		map[string]string{"alertname": "DiskFull", "instance": "db-1", "severity": "critical"},
		map[string]string{"alertname": "DiskFull", "instance": "db-2", "severity": "critical"},
		map[string]string{"alertname": "CPUHot", "instance": "web-1", "severity": "warning"})

	for _, c := range []struct {
		alert *event.Event
		who   string
	}{{disk, "handled by " + bob.UserID.String()}, {cpu, "nobody claimed it"}} {
		if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
			return editOf(j.UserID, c.alert.ID)(evt) && strings.HasPrefix(newBody(evt), "✅ Resolved after ") && strings.Contains(newBody(evt), c.who)
		}); err != nil {
			t.Fatalf("the alert %q was not edited to resolved, %s: %v", tesths.Body(c.alert), c.who, err)
		}
		inThread := func(evt *event.Event) bool {
			rel := evt.Content.AsMessage().RelatesTo
			return tesths.MessageFrom(room, j.UserID)(evt) && rel != nil && rel.Type == event.RelThread && rel.EventID == c.alert.ID
		}
		if _, err := alice.WaitFor(ctx, waitReply, inThread); err != nil {
			t.Fatalf("no all-clear in the thread of %q: %v", tesths.Body(c.alert), err)
		}
		if n := len(alice.Events(inThread)); n != 1 {
			t.Errorf("%d replies in the thread of %q, want one", n, tesths.Body(c.alert))
		}
	}
	var ids []id.EventID
	for _, evt := range alice.Events(func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo == nil &&
			strings.Contains(tesths.Body(evt), "Alertmanager: ")
	}) {
		ids = append(ids, evt.ID)
	}
	if len(ids) != 2 {
		t.Errorf("%d top-level messages for Alertmanager's alerts, want 2: %v", len(ids), ids)
	}
}

// silenceCall sends a request to Jarvis's silences with token, as curl in
// a deploy script would, and decodes the answer into out.
func silenceCall(t *testing.T, method, url, token string, body any, out any) int {
	t.Helper()
	var data []byte
	if body != nil {
		data, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest(method, url, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

type silenceAnswer struct {
	Silence struct {
		ID         int64  `json:"id"`
		By         string `json:"by"`
		HeldAlerts int    `json:"held_alerts"`
	} `json:"silence"`
	Silences []struct {
		ID         int64 `json:"id"`
		HeldAlerts int   `json:"held_alerts"`
	} `json:"silences"`
}

// TestSilencesFromScripts: a deploy script, with a receiver token, sets a
// silence on agent=EVE and one on alertname=DiskFull over the API; the
// room is told of each, and `!silence list` names who set them. EVE goes
// quiet, and DiskFull and BuildStuck (labelled agent=EVE) fire in the
// real Alertmanager: the one silence on agent=EVE holds EVE's own alert
// and BuildStuck, and nothing reaches the room while the silences hold.
// The script ends them: each end says what it held, and the alerts, still
// open, are posted. A token of another role may not set one.
func TestSilencesFromScripts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, room, alice, _, agents := onCallRoom(t, eveEvery2s, "EVE")
	token := j.issueToken(t, "receiver", "")
	am := startAlertmanager(t, agents.base, token)
	silences := agents.base + "/api/silences"
	ends := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)

	if code := silenceCall(t, http.MethodPost, silences, agents.tokens.agent["EVE"],
		map[string]any{"target": "EVE", "reason": "deploy", "ends_at": ends}, nil); code != http.StatusForbidden {
		t.Errorf("EVE's own token set a silence: %d, want 403", code)
	}
	var ids []int64
	for _, target := range []string{"agent=EVE", "alertname=DiskFull"} {
		var set silenceAnswer
		if code := silenceCall(t, http.MethodPost, silences, token,
			map[string]any{"target": target, "reason": "deploy <b>4.2</b>", "by": "deploy.sh", "ends_at": ends}, &set); code != http.StatusCreated {
			t.Fatalf("silence on %s: %d", target, code)
		}
		ids = append(ids, set.Silence.ID)
		if !strings.HasSuffix(set.Silence.By, " (deploy.sh)") {
			t.Errorf("the silence on %s is by %q, want the token's id and deploy.sh", target, set.Silence.By)
		}
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "Silence 2 on alertname=DiskFull until ")
	}); err != nil {
		t.Fatalf("the room was not told of the silence: %v", err)
	}
	list := tesths.Body(j.ask(t, alice, room, "!silence list"))
	for _, want := range []string{"agent=EVE until", "alertname=DiskFull until", "(deploy.sh) because “deploy <b>4.2</b>”"} {
		if !strings.Contains(list, want) {
			t.Errorf("!silence list = %q, without %q", list, want)
		}
	}

	postAlerts(t, am, time.Now().Add(time.Hour), map[string]string{"alertname": "DiskFull", "instance": "db-1", "severity": "critical"},
		map[string]string{"alertname": "BuildStuck", "agent": "EVE", "severity": "warning"})
	// agent=EVE holds EVE's missed heartbeats and BuildStuck, which names
	// EVE; alertname=DiskFull its group.
	for deadline := time.Now().Add(waitReply); ; {
		var now silenceAnswer
		silenceCall(t, http.MethodGet, silences, token, nil, &now)
		if len(now.Silences) == 2 && now.Silences[0].HeldAlerts >= 2 && now.Silences[1].HeldAlerts > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the silences did not hold EVE's alert, BuildStuck's and DiskFull's: %+v", now.Silences)
		}
		time.Sleep(200 * time.Millisecond)
	}
	alert := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo == nil && strings.Contains(tesths.Body(evt), text) &&
				!strings.Contains(tesths.Body(evt), "ended")
		}
	}
	for _, text := range []string{"Alertmanager: DiskFull", "Alertmanager: BuildStuck", "EVE has missed", "EVE is offline"} {
		if got := alice.Events(alert(text)); len(got) > 0 {
			t.Errorf("a silenced alert reached the room: %q", tesths.Body(got[0]))
		}
	}

	for _, id := range ids {
		var ended silenceAnswer
		if code := silenceCall(t, http.MethodDelete, fmt.Sprintf("%s/%d?by=deploy.sh", silences, id), token, nil, &ended); code != http.StatusOK {
			t.Fatalf("end silence %d: %d", id, code)
		}
	}
	for _, name := range []string{"DiskFull", "BuildStuck"} {
		if _, err := alice.WaitFor(ctx, waitReply, alert("Alertmanager: "+name)); err != nil {
			t.Errorf("%s's alert was not posted when its silence ended: %v", name, err)
		}
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return alert("EVE has missed")(evt) || alert("EVE is offline")(evt)
	}); err != nil {
		t.Errorf("EVE's alert was not posted when its silence ended: %v", err)
	}
	if code := silenceCall(t, http.MethodDelete, fmt.Sprintf("%s/%d", silences, ids[0]), token, nil, nil); code != http.StatusGone {
		t.Errorf("ending an ended silence answered %d, want 410", code)
	}
}

// notification is a webhook body as Alertmanager sends it, for a group
// named alertname with one alert carrying labels and annotations.
func notification(alertname string, labels, annotations map[string]string) map[string]any {
	all := map[string]string{"alertname": alertname}
	if annotations == nil {
		annotations = map[string]string{}
	}
	for k, v := range labels {
		all[k] = v
	}
	return map[string]any{"version": "4", "groupKey": "{}:{alertname=\"" + alertname + "\"}", "status": "firing", "receiver": "jarvis",
		"groupLabels": map[string]string{"alertname": alertname}, "commonLabels": all, "commonAnnotations": map[string]string{},
		"alerts": []map[string]any{{"status": "firing", "labels": all, "annotations": annotations,
			"startsAt": "2026-04-17T00:00:00Z", "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "https://evil.example.org/graph"}}}
}

// TestAlertmanagerAttacks: what a caller who is not Alertmanager, or an
// alert written to attack the room, gets from the receiver of the real
// binary: no token or another role's is refused; a body past
// alertmanager.max_body_bytes is 413 naming the key; a label with
// Markdown, HTML and links is shown as text, and only a configured host's
// runbook is a link; a notification replayed is one message. A valid
// notification sent last shows that none of the refused ones reached the
// room.
func TestAlertmanagerAttacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, room, alice, _, agents := onCallRoom(t, "alertmanager:\n  max_body_bytes: 4096\n  link_hosts: [wiki.example.org]\n")
	token := j.issueToken(t, "receiver", "")
	url := agents.base + "/api/alertmanager"
	var problem struct {
		NeedsRole []string `json:"needs_role"`
		LimitKey  string   `json:"limit_key"`
	}
	if code := silenceCall(t, http.MethodPost, url, "", notification("NoToken", nil, nil), nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code := silenceCall(t, http.MethodPost, url, agents.tokens.supervisor, notification("Supervisor", nil, nil), &problem); code != http.StatusForbidden ||
		len(problem.NeedsRole) != 1 || problem.NeedsRole[0] != "receiver" {
		t.Errorf("a supervisor token: %d needing %v, want 403 needing receiver", code, problem.NeedsRole)
	}
	big := notification("Huge", map[string]string{"padding": strings.Repeat("x", 5000)}, nil)
	if code := silenceCall(t, http.MethodPost, url, token, big, &problem); code != http.StatusRequestEntityTooLarge || problem.LimitKey != "alertmanager.max_body_bytes" {
		t.Errorf("a 5 KB body: %d naming %q, want 413 naming alertmanager.max_body_bytes", code, problem.LimitKey)
	}
	hostile := notification("Hostile", map[string]string{"instance": "[pay here](https://evil.example.org) <b>bold</b> @room"},
		map[string]string{"runbook_url": "https://wiki.example.org/runbooks/hostile"})
	for range 3 {
		if code := silenceCall(t, http.MethodPost, url, token, hostile, nil); code != http.StatusOK {
			t.Fatalf("the hostile alert: %d", code)
		}
	}
	if code := silenceCall(t, http.MethodPost, url, token, notification("Last", nil, nil), nil); code != http.StatusOK {
		t.Fatalf("the last alert: %d", code)
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "Alertmanager: Last")
	}); err != nil {
		t.Fatalf("the last alert was not posted: %v", err)
	}
	posted := alice.Events(func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "Alertmanager: ")
	})
	var names []string
	for _, evt := range posted {
		names = append(names, strings.SplitN(strings.SplitN(tesths.Body(evt), "Alertmanager: ", 2)[1], " ", 2)[0])
	}
	if strings.Join(names, ",") != "Hostile,Last" {
		t.Fatalf("the room shows the alerts %v, want Hostile once and Last", names)
	}
	html := posted[0].Content.AsMessage().FormattedBody
	for _, bad := range []string{"<b>bold", `href="https://evil.example.org`, "evil.example.org/graph"} {
		if strings.Contains(html, bad) {
			t.Errorf("the hostile alert's HTML has %q: %s", bad, html)
		}
	}
	if !strings.Contains(html, `href="https://wiki.example.org/runbooks/hostile"`) {
		t.Errorf("the runbook on the configured host is not a link: %s", html)
	}
}

// TestMuteTimingHoldsInItsWindow: a mute timing on EVE and the
// Alertmanager label alertname=DiskFull whose window holds now (all of
// today and tomorrow, in UTC) and one on alertname=CPUHot whose window
// is on another day: EVE's missed heartbeats and DiskFull's group are
// held, and `!silence list` shows the window's silences; CPUHot's group,
// outside its window, is posted.
func TestMuteTimingHoldsInItsWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	day := func(d time.Duration) string { return strings.ToLower(time.Now().UTC().Add(d).Weekday().String()) }
	timings := fmt.Sprintf(`oncall:
  mute_timings:
    - name: maintenance
      targets: [EVE, "alertname=DiskFull"]
      weekdays: [%s, %s]
      times: [{start_time: "00:00", end_time: "24:00"}]
    - name: elsewhen
      targets: ["alertname=CPUHot"]
      weekdays: [%s]
      times: [{start_time: "00:00", end_time: "24:00"}]
`, day(0), day(24*time.Hour), day(72*time.Hour))
	j, room, alice, _, agents := onCallRoom(t, timings+eveEvery2s, "EVE")
	token := j.issueToken(t, "receiver", "")
	am := startAlertmanager(t, agents.base, token)
	// The on-call sweep, every 5 s, opens the window's silences.
	held := func(enough func(held []int) bool) {
		t.Helper()
		for deadline := time.Now().Add(waitReply); ; {
			var now silenceAnswer
			silenceCall(t, http.MethodGet, agents.base+"/api/silences", token, nil, &now)
			var counts []int
			for _, s := range now.Silences {
				counts = append(counts, s.HeldAlerts)
			}
			if enough(counts) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the window's silences hold %v", counts)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	held(func(counts []int) bool { return len(counts) == 2 })

	postAlerts(t, am, time.Now().Add(time.Hour),
		map[string]string{"alertname": "DiskFull", "instance": "db-1", "severity": "critical"},
		map[string]string{"alertname": "CPUHot", "instance": "web-1", "severity": "warning"})
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "Alertmanager: CPUHot")
	}); err != nil {
		t.Fatalf("CPUHot, outside its mute timing's window, was not posted: %v", err)
	}
	// EVE's missed heartbeats and DiskFull's group, each held by its silence.
	held(func(counts []int) bool { return len(counts) == 2 && counts[0] > 0 && counts[1] > 0 })
	for _, text := range []string{"Alertmanager: DiskFull", "EVE has missed", "EVE is offline"} {
		if got := alice.Events(func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), text)
		}); len(got) > 0 {
			t.Errorf("an alert the window holds reached the room: %q", tesths.Body(got[0]))
		}
	}
	list := tesths.Body(j.ask(t, alice, room, "!silence list"))
	for _, want := range []string{"EVE until", "alertname=DiskFull until", "by oncall.mute_timings maintenance"} {
		if !strings.Contains(list, want) {
			t.Errorf("!silence list = %q, without %q", list, want)
		}
	}
}

// TestOperatingShowsAlertmanagerConfig: docs/operating.md shows the
// configuration the tests run Alertmanager with, key for key, with its
// own waits, address and token.
func TestOperatingShowsAlertmanagerConfig(t *testing.T) {
	page, err := os.ReadFile("../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(page), "### Alertmanager")
	_, block, _ := strings.Cut(section, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	keys := func(text string) []string {
		var out []string
		for _, line := range strings.Split(text, "\n") {
			if key, _, ok := strings.Cut(line, ":"); ok {
				out = append(out, key)
			}
		}
		return out
	}
	if got, want := keys(block), keys(alertmanagerConfig); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("operating.md's Alertmanager configuration has the keys\n%s\nwant the test's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
