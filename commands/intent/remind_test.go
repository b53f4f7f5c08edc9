package intent

import (
	"strings"
	"testing"
	"time"
)

// remindCases are reminder sentences said on Tuesday 1 December 2026 at
// 09:30 in Berlin, and what they ask for: the text, the time (in Berlin,
// "" when Jarvis must ask) and the repeat.
var remindCases = []struct {
	text, what, at, every string
}{
	{"remind me to call the bank at 10", "call the bank", "Tue 01 Dec 10:00", ""},
	{"Remind me to call the bank tomorrow at 10", "call the bank", "Wed 02 Dec 10:00", ""},
	{"remind me to call the bank tomorrow at 10am", "call the bank", "Wed 02 Dec 10:00", ""},
	{"remind me in 20 minutes to stretch", "stretch", "Tue 01 Dec 09:50", ""},
	{"remind me to stretch in 20 minutes", "stretch", "Tue 01 Dec 09:50", ""},
	{"remind me in 1 minute to check the oven", "check the oven", "Tue 01 Dec 09:31", ""},
	{"in an hour remind me to take the pizza out", "take the pizza out", "Tue 01 Dec 10:30", ""},
	{"remind me in half an hour to call mum", "call mum", "Tue 01 Dec 10:00", ""},
	{"remind me in 2 hours to leave", "leave", "Tue 01 Dec 11:30", ""},
	{"remind me in 3 days to renew the certificate", "renew the certificate", "Fri 04 Dec 09:30", ""},
	{"every Monday at 9 remind me of the standup", "the standup", "Mon 07 Dec 09:00", "week"},
	{"remind me every Monday at 9 to write the weekly report", "write the weekly report", "Mon 07 Dec 09:00", "week"},
	{"remind me every Tuesday at 10:15 to water the plants", "water the plants", "Tue 01 Dec 10:15", "week"},
	{"remind me every Tuesday at 9 to water the plants", "water the plants", "Tue 08 Dec 09:00", "week"},
	{"remind me every day at 8 to take my pills", "take my pills", "Wed 02 Dec 08:00", "day"},
	{"remind me every morning to check the fleet", "check the fleet", "Wed 02 Dec 08:00", "day"},
	{"remind me every evening to back up", "back up", "Tue 01 Dec 18:00", "day"},
	{"remind me at 3pm to send the invoice", "send the invoice", "Tue 01 Dec 15:00", ""},
	{"remind me at 9 to send the invoice", "send the invoice", "Wed 02 Dec 09:00", ""},
	{"remind me at 14:45 about the review", "the review", "Tue 01 Dec 14:45", ""},
	{"remind me at noon to eat", "eat", "Tue 01 Dec 12:00", ""},
	{"remind me on Friday to renew the certificate", "renew the certificate", "Fri 04 Dec 09:00", ""},
	{"remind me on Friday at 16:00 to renew the certificate", "renew the certificate", "Fri 04 Dec 16:00", ""},
	{"remind me on Tuesday at 9 to pay rent", "pay rent", "Tue 08 Dec 09:00", ""},
	{"remind me tomorrow morning to bring the keys", "bring the keys", "Wed 02 Dec 08:00", ""},
	{"remind me tonight to call Ana", "call Ana", "Tue 01 Dec 20:00", ""},
	{"remind me today at 5pm to close the sprint", "close the sprint", "Tue 01 Dec 17:00", ""},
	{"please remind me to Call The Bank at 10.", "Call The Bank", "Tue 01 Dec 10:00", ""},
	{"could you remind me tomorrow at 9:15 that the DB password rotates", "the DB password rotates", "Wed 02 Dec 09:15", ""},
	{"set a reminder for tomorrow at 11 to book the train", "book the train", "Wed 02 Dec 11:00", ""},
	{"me to call the bank at 10", "call the bank", "Tue 01 Dec 10:00", ""},
	{"in 20m stand up", "stand up", "Tue 01 Dec 09:50", ""},
	// What Jarvis must ask about.
	{"remind me to call the bank", "call the bank", "", ""},
	{"remind me tomorrow at 10", "", "Wed 02 Dec 10:00", ""},
	{"remind me", "", "", ""},
}

func TestReminder(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 9, 30, 0, 0, berlin)
	for _, tt := range remindCases {
		t.Run(tt.text, func(t *testing.T) {
			w := Reminder(tt.text, now.UTC(), berlin)
			at := ""
			if !w.At.IsZero() {
				at = w.At.In(berlin).Format("Mon 02 Jan 15:04")
			}
			if w.What != tt.what || at != tt.at || w.Every != tt.every {
				t.Errorf("Reminder(%q) = %q at %q every %q, want %q at %q every %q", tt.text, w.What, at, w.Every, tt.what, tt.at, tt.every)
			}
			if (tt.what == "" || tt.at == "") != (w.Question != "") {
				t.Errorf("Reminder(%q) asks %q", tt.text, w.Question)
			}
		})
	}
}

func TestIsReminder(t *testing.T) {
	for text, want := range map[string]bool{
		"remind me to call the bank at 10":           true,
		"Please remind me tomorrow":                  true,
		"every Monday at 9 remind me of the standup": true,
		"set a reminder for 10":                      true,
		"I reminded him yesterday":                   false,
		"tell me when GI drops below 0.70":           false,
		"what is the reminder for?":                  false,
	} {
		if got := IsReminder(text); got != want {
			t.Errorf("IsReminder(%q) = %v, want %v", text, got, want)
		}
	}
}

// FuzzReminder: whatever is typed, the reader does not panic, gives a
// time or a question, and keeps the text to what was typed.
func FuzzReminder(f *testing.F) {
	for _, tt := range remindCases {
		f.Add(tt.text)
	}
	now := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		w := Reminder(text, now, time.UTC)
		if w.Question == "" && (w.What == "" || w.At.IsZero()) {
			t.Fatalf("%q gives %+v without a question", text, w)
		}
		if !w.At.IsZero() && w.At.Before(now) {
			t.Fatalf("%q is due in the past: %s", text, w.At)
		}
		for _, word := range strings.Fields(w.What) {
			if !strings.Contains(strings.ToValidUTF8(text, ""), word) {
				t.Fatalf("%q gives the text %q, with %q not typed", text, w.What, word)
			}
		}
	})
}
