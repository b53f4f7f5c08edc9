package alertmanager_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/alertmanager"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// receiver is the receiver wired on a store, with what each notification
// caused in the outbox.
type receiver struct {
	t     *testing.T
	st    *store.Store
	svc   *alertmanager.Service
	clock *coretest.Clock
	seen  int
}

func newReceiver(t *testing.T, engine string, edit func(*alertmanager.Config)) *receiver {
	t.Helper()
	st := testdb.OpenStore(t, engine)
	clock := coretest.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	w := services.Wiring{Store: st, Clock: clock, Room: "!ops:x", Admins: []string{"@alice:x"}}
	cfg := testconfig.Alertmanager()
	if edit != nil {
		edit(&cfg)
	}
	svc := alertmanager.NewService(cfg, alertmanager.Deps{Oncall: w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute}),
		Tx: st, Clock: clock, RoomID: w.Room, Admins: w.Admins})
	return &receiver{t: t, st: st, svc: svc, clock: clock}
}

// send takes n and returns the notices it wrote.
func (r *receiver) send(n alertmanager.Notification) []core.OutboxEntry {
	r.t.Helper()
	if err := r.svc.Receive(context.Background(), n); err != nil {
		r.t.Fatalf("receive %s: %v", n.Status, err)
	}
	all, err := r.st.Outbox().Waiting(context.Background(), 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	out := all[r.seen:]
	r.seen = len(all)
	return out
}

func group(status string, alerts ...alertmanager.Alert) alertmanager.Notification {
	return alertmanager.Notification{Version: "4", GroupKey: `{}:{alertname="DiskFull"}`, Status: status, Receiver: "jarvis",
		GroupLabels: map[string]string{"alertname": "DiskFull"}, CommonLabels: map[string]string{"alertname": "DiskFull", "severity": "critical"},
		Alerts: alerts}
}

func disk(instance, status string) alertmanager.Alert {
	return alertmanager.Alert{Status: status, Labels: map[string]string{"alertname": "DiskFull", "severity": "critical", "instance": instance},
		Annotations: map[string]string{"summary": "disk of " + instance + " is full"}}
}

// TestAlertGroupIsOneIncident: a group is posted once with 👀 and 💤,
// paging the admins as its severity says; a repeated notification changes
// nothing; an alert more edits the message; the group resolved is the
// all-clear edit and one thread reply, and a resolved notification again
// changes nothing.
func TestAlertGroupIsOneIncident(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			r := newReceiver(t, engine, nil)
			first := r.send(group("firing", disk("db-1", "firing")))
			if len(first) != 3 || first[0].Kind != core.NoticeMessage || first[1].Body != "👀" || first[2].Body != "💤" {
				t.Fatalf("first notification wrote %+v, want the alert with 👀 and 💤", first)
			}
			if !strings.Contains(first[0].Body, "🚨 **Alertmanager: DiskFull** — 1 alert firing") || len(first[0].Mentions) != 1 {
				t.Errorf("alert = %q mentioning %v, want a page naming the group, mentioning the admin", first[0].Body, first[0].Mentions)
			}
			if again := r.send(group("firing", disk("db-1", "firing"))); len(again) != 0 {
				t.Errorf("a repeated notification wrote %+v", again)
			}
			grown := r.send(group("firing", disk("db-1", "firing"), disk("db-2", "firing")))
			if len(grown) != 1 || grown[0].Kind != core.NoticeEdit || grown[0].Target != first[0].Key || !strings.Contains(grown[0].Body, "2 alerts firing") {
				t.Fatalf("an alert more wrote %+v, want one edit of the alert saying 2 firing", grown)
			}
			shrunk := r.send(group("firing", disk("db-1", "resolved"), disk("db-2", "firing")))
			if len(shrunk) != 1 || shrunk[0].Kind != core.NoticeEdit || !strings.Contains(shrunk[0].Body, "1 alert firing, 1 resolved") {
				t.Fatalf("an alert less wrote %+v, want one edit saying 1 firing, 1 resolved", shrunk)
			}
			r.clock.Advance(10 * time.Minute)
			done := r.send(group("resolved", disk("db-1", "resolved"), disk("db-2", "resolved")))
			if len(done) != 2 || done[0].Kind != core.NoticeEdit || !strings.HasPrefix(done[0].Body, "✅ **Resolved** after 10m") ||
				!done[1].Thread || !strings.Contains(done[1].Body, "Alertmanager says DiskFull resolved.") {
				t.Fatalf("resolved wrote %+v, want the all-clear edit and one thread reply", done)
			}
			if again := r.send(group("resolved", disk("db-1", "resolved"))); len(again) != 0 {
				t.Errorf("a repeated resolved notification wrote %+v", again)
			}
			if refired := r.send(group("firing", disk("db-1", "firing"))); len(refired) != 3 || refired[0].Key == first[0].Key {
				t.Errorf("the group firing again wrote %+v, want a new alert", refired)
			}
		})
	}
}

// TestAlertTextIsUntrusted: labels and annotations are escaped and capped,
// a runbook link is a link only on a configured host, and a severity the
// table does not name is the default urgency.
func TestAlertTextIsUntrusted(t *testing.T) {
	r := newReceiver(t, store.SQLite, func(c *alertmanager.Config) {
		c.LinkHosts = []string{"wiki.example.org"}
		c.MaxText = 40
	})
	a := alertmanager.Alert{Status: "firing", Labels: map[string]string{"alertname": "X", "instance": "[click](https://evil.example) **@room** <b>"},
		Annotations:  map[string]string{"summary": strings.Repeat("long ", 50), "runbook_url": "https://wiki.example.org/run(book)"},
		GeneratorURL: "https://evil.example/graph"}
	n := alertmanager.Notification{Version: "4", GroupKey: "g2", Status: "firing", CommonLabels: map[string]string{"alertname": "X", "severity": "odd"},
		Alerts: []alertmanager.Alert{a}}
	got := r.send(n)
	body := got[0].Body
	for _, bad := range []string{"[click](", "**@room**", "<b>", "evil.example/graph", "run(book)"} {
		if strings.Contains(body, bad) {
			t.Errorf("the alert shows %q as markup or an unlisted link: %q", bad, body)
		}
	}
	if !strings.Contains(body, "[runbook](https://wiki.example.org/run%28book%29)") {
		t.Errorf("the alert = %q, want the runbook as a link on its configured host", body)
	}
	if strings.Contains(body, strings.Repeat("long ", 10)) {
		t.Errorf("the summary is not capped: %q", body)
	}
	if !strings.HasPrefix(body, "🔔") || len(got[0].Mentions) != 0 {
		t.Errorf("an unnamed severity = %q mentioning %v, want notify", body, got[0].Mentions)
	}
}

// TestNotificationChecked: a notification of another version, without a
// group key or with an unknown status is refused and changes nothing.
func TestNotificationChecked(t *testing.T) {
	r := newReceiver(t, store.SQLite, nil)
	for _, n := range []alertmanager.Notification{
		{Version: "3", GroupKey: "g", Status: "firing"},
		{Version: "4", GroupKey: " ", Status: "firing"},
		{Version: "4", GroupKey: "g", Status: "pending"},
	} {
		if err := r.svc.Receive(context.Background(), n); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Receive(%+v) = %v, want invalid", n, err)
		}
	}
	if got := r.send(group("resolved")); len(got) != 0 {
		t.Errorf("refused notifications and an unknown group resolved wrote %+v", got)
	}
}
