package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	ics "github.com/arran4/golang-ical"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/reminder"
)

// calendarEventLength is how long a reminder or a task's due time shows
// in a calendar.
const calendarEventLength = 15 * time.Minute

// Calendar is what the calendar feed reads: whose a calendar feed token
// is, and that person's reminders and tasks.
type Calendar struct {
	// Citizen says whose calendar a feed token reads: a feed token's
	// alone, never a personal API token's.
	Citizen   func(ctx context.Context, token string) (string, error)
	Reminders func(ctx context.Context, owner string) ([]reminder.Reminder, error)
	Tasks     func(ctx context.Context, owner string) ([]notebook.Entry, error)
	// Now stamps the feed.
	Now func() time.Time
}

// RegisterCalendar adds GET /api/me/calendar.ics: the person's reminders
// still to come (repeating ones with their rule) and dated open tasks, as
// an iCalendar feed a calendar app subscribes to. The calendar feed token
// (`!tw token feed`), which reads the feed and nothing else, comes as a
// bearer token or, since most calendar apps can only subscribe to a URL,
// as ?token=, where proxies log it.
func RegisterCalendar(s *Server, c Calendar) {
	s.Handle("GET /api/me/calendar.ics", http.HandlerFunc(c.serve))
}

func (c Calendar) serve(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		token = r.URL.Query().Get("token")
	}
	if token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="jarvis calendar"`)
		WriteError(w, r, core.ErrUnauthorized)
		return
	}
	owner, err := c.Citizen(r.Context(), token)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="jarvis calendar"`)
		WriteError(w, r, err)
		return
	}
	reminders, err := c.Reminders(r.Context(), owner)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	tasks, err := c.Tasks(r.Context(), owner)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/calendar; charset=utf-8")
	w.Header().Set("Cache-Control", "private, no-store")
	_ = calendarFeed(reminders, tasks, c.Now()).SerializeTo(w)
}

// calendarFeed builds the feed: one event per reminder (with an alarm at
// its time) and per dated task.
func calendarFeed(reminders []reminder.Reminder, tasks []notebook.Entry, now time.Time) *ics.Calendar {
	cal := ics.NewCalendar()
	cal.SetMethod(ics.MethodPublish)
	cal.SetProductId("-//Jarvis//Reminders and tasks//EN")
	cal.SetName("Jarvis")
	cal.SetXWRCalName("Jarvis")
	cal.SetRefreshInterval("PT15M")
	for _, r := range reminders {
		ev := cal.AddEvent(fmt.Sprintf("reminder-%d@jarvis", r.ID))
		ev.SetDtStampTime(now)
		ev.SetCreatedTime(r.CreatedAt)
		ev.SetStartAt(r.Due)
		ev.SetEndAt(r.Due.Add(calendarEventLength))
		ev.SetSummary("⏰ " + r.Text)
		switch r.Every {
		case reminder.Daily:
			ev.AddRrule("FREQ=DAILY")
		case reminder.Weekly:
			ev.AddRrule("FREQ=WEEKLY")
		}
		alarm := ev.AddAlarm()
		alarm.SetAction(ics.ActionDisplay)
		alarm.SetTrigger("PT0M")
		alarm.SetProperty(ics.ComponentPropertyDescription, r.Text)
	}
	for _, t := range tasks {
		if t.Due.IsZero() {
			continue
		}
		ev := cal.AddEvent(fmt.Sprintf("task-%d@jarvis", t.ID))
		ev.SetDtStampTime(now)
		ev.SetCreatedTime(t.CreatedAt)
		ev.SetStartAt(t.Due)
		ev.SetEndAt(t.Due.Add(calendarEventLength))
		ev.SetSummary("Task: " + t.Text)
	}
	return cal
}
