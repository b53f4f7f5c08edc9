package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ics "github.com/arran4/golang-ical"
	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestCalendarFeed fetches a person's feed over real HTTP with their
// calendar feed token and parses it back: their reminders (a weekly one
// with its rule and an alarm) and dated open tasks, nobody else's. Their
// personal API token, which arms and deletes tripwires, is refused there,
// and so is the feed token once revoked.
func TestCalendarFeed(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	w := services.Wiring{Store: st, Clock: clock}
	tw, reminders := w.Tripwires(testconfig.Tripwires(), core.NewSourceRegistry()), w.Reminders()
	notes := notebook.NewService(st.Notebook(), clock)
	alice, _, err := tw.CreateFeedToken(ctx, "@alice:x")
	if err != nil {
		t.Fatal(err)
	}
	personal, _, err := tw.CreateToken(ctx, "@alice:x", "calendar")
	if err != nil {
		t.Fatal(err)
	}
	revoked, gone, err := tw.CreateFeedToken(ctx, "@alice:x")
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.RevokeToken(ctx, "@alice:x", gone.ID); err != nil {
		t.Fatal(err)
	}
	standup := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	for _, r := range []reminder.Reminder{
		{Owner: "@alice:x", Text: "plan the week, with “quotes”; commas, and\\backslashes", Due: standup, Every: reminder.Weekly, Zone: "UTC"},
		{Owner: "@alice:x", Text: "call the bank", Due: clock.Now().Add(time.Hour), Zone: "UTC"},
		{Owner: "@bob:x", Text: "bob's secret", Due: clock.Now().Add(time.Hour), Zone: "UTC"},
	} {
		if _, err := reminders.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := notes.Add(ctx, "@alice:x", notebook.Task, "renew the certificate", standup.Add(-72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := notes.Add(ctx, "@alice:x", notebook.Task, "someday", time.Time{}); err != nil {
		t.Fatal(err)
	}

	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, nil)
	api.RegisterCalendar(server, api.Calendar{Citizen: tw.CitizenForFeedToken, Reminders: reminders.List,
		Tasks: func(ctx context.Context, owner string) ([]notebook.Entry, error) {
			return notes.List(ctx, owner, notebook.Task)
		},
		Now: clock.Now})
	srv := httptest.NewServer(checked(t, server))
	t.Cleanup(srv.Close)

	for _, tt := range []struct {
		name, url, bearer string
		code              int
	}{
		{"no token", "/api/me/calendar.ics", "", http.StatusUnauthorized},
		{"a wrong token", "/api/me/calendar.ics?token=jtw_nope", "", http.StatusUnauthorized},
		{"the personal token in the query", "/api/me/calendar.ics?token=" + personal, "", http.StatusUnauthorized},
		{"the personal token as a bearer", "/api/me/calendar.ics", personal, http.StatusUnauthorized},
		{"a revoked feed token", "/api/me/calendar.ics?token=" + revoked, "", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+tt.url, nil)
		if tt.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+tt.bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.code)
		}
	}

	fetch := func(req *http.Request) *ics.Calendar {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/calendar") {
			t.Fatalf("feed: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		cal, err := ics.ParseCalendar(resp.Body)
		if err != nil {
			t.Fatalf("the feed does not parse: %v", err)
		}
		return cal
	}
	byQuery, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/me/calendar.ics?token="+alice, nil)
	byHeader, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/me/calendar.ics", nil)
	byHeader.Header.Set("Authorization", "Bearer "+alice)
	for _, req := range []*http.Request{byQuery, byHeader} {
		cal := fetch(req)
		events := map[string]*ics.VEvent{}
		for _, ev := range cal.Events() {
			events[ev.Id()] = ev
		}
		if len(events) != 3 {
			t.Fatalf("%d events, want Alice's two reminders and her dated task: %v", len(events), events)
		}
		weekly := events["reminder-1@jarvis"]
		if weekly == nil {
			t.Fatalf("no weekly reminder in %v", events)
		}
		start, err := weekly.GetStartAt()
		if err != nil || !start.Equal(standup) {
			t.Errorf("the weekly reminder starts %s (%v), want %s", start, err, standup)
		}
		if p := weekly.GetProperty(ics.ComponentPropertyRrule); p == nil || p.Value != "FREQ=WEEKLY" {
			t.Errorf("the weekly reminder's rule is %+v", p)
		}
		if p := weekly.GetProperty(ics.ComponentPropertySummary); p == nil || p.Value != "⏰ plan the week, with “quotes”; commas, and\\backslashes" {
			t.Errorf("the summary reads back as %+v", p)
		}
		if len(weekly.Alarms()) != 1 {
			t.Errorf("the weekly reminder has %d alarms", len(weekly.Alarms()))
		}
		task := events["task-1@jarvis"]
		if task == nil || task.GetProperty(ics.ComponentPropertySummary).Value != "Task: renew the certificate" {
			t.Errorf("the dated task is %+v", task)
		}
		for _, ev := range events {
			if strings.Contains(ev.GetProperty(ics.ComponentPropertySummary).Value, "bob") {
				t.Errorf("Alice's feed shows Bob's reminder")
			}
		}
	}
}
