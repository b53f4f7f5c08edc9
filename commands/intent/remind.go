package intent

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// When is what a reminder sentence asked for: the text, the first time,
// and how it repeats ("", "day" or "week").
type When struct {
	What  string
	At    time.Time
	Every string
	// Question asks what is missing, when What or At could not be read.
	Question string
}

// IsReminder reports whether a sentence asks to be reminded of something.
func IsReminder(text string) bool {
	return remindLead.MatchString(text) || remindInside.MatchString(text)
}

// Reminder reads a sentence such as "remind me to call the bank tomorrow
// at 10", "in 20 minutes remind me to stretch" or "every Monday at 9
// remind me of the standup", at now in the person's zone loc. Without a
// time, 9:00 is meant for a day ("tomorrow"); a time already past today
// means tomorrow. The text is what is left once the lead-in and the time
// are taken out.
func Reminder(text string, now time.Time, loc *time.Location) When {
	now = now.In(loc)
	rest := " " + strings.TrimRight(strings.Join(strings.Fields(strings.ToValidUTF8(text, "")), " "), ".!?") + " "
	take := func(re *regexp.Regexp) []string {
		m := re.FindStringSubmatchIndex(rest)
		if m == nil {
			return nil
		}
		out := make([]string, len(m)/2)
		for i := range out {
			if m[2*i] >= 0 {
				out[i] = strings.ToLower(rest[m[2*i]:m[2*i+1]])
			}
		}
		rest = rest[:m[0]] + " " + rest[m[1]:]
		return out
	}
	var w When
	var day time.Time
	hour, minute, timed := 9, 0, false
	// step is how far a time already past moves: a day, or a week when a
	// weekday was named.
	step := 1
	if m := take(remindIn); m != nil {
		w.At = now.Add(remindDuration(m[1], m[2]))
	}
	if m := take(remindEvery); m != nil {
		switch m[1] {
		case "day", "morning", "evening", "night":
			w.Every = "day"
			day = startOfDay(now)
			if m[1] != "day" {
				hour = map[string]int{"morning": 8, "evening": 18, "night": 21}[m[1]]
			}
		default:
			w.Every, step = "week", 7
			day = nextWeekday(now, remindWeekdays[m[1][:3]])
		}
	} else if m := take(remindDay); m != nil {
		switch d := m[1]; {
		case d == "today":
			day = startOfDay(now)
		case d == "tonight":
			day, hour = startOfDay(now), 20
		case d == "tomorrow" || d == "tmrw":
			day = startOfDay(now).AddDate(0, 0, 1)
		default:
			day, step = nextWeekday(now, remindWeekdays[d[:3]]), 7
		}
		if m[2] != "" {
			hour = map[string]int{"morning": 8, "afternoon": 14, "evening": 18, "night": 20}[m[2]]
		}
	}
	if m := take(remindAt); m != nil {
		h, mm, ok := clockTime(m[1], m[2], m[3], m[4])
		if ok {
			hour, minute, timed = h, mm, true
		}
	}
	if w.At.IsZero() {
		switch {
		case !day.IsZero():
			w.At = time.Date(day.Year(), day.Month(), day.Day(), hour, minute, 0, 0, loc)
			if !w.At.After(now) {
				w.At = w.At.AddDate(0, 0, step)
			}
		case timed:
			w.At = time.Date(now.Year(), now.Month(), now.Day(), hour, minute, 0, 0, loc)
			if !w.At.After(now) {
				w.At = w.At.AddDate(0, 0, 1)
			}
		}
	}
	rest = remindLead.ReplaceAllString(rest, " ")
	rest = remindInside.ReplaceAllString(rest, " ")
	for range 3 {
		rest = remindFiller.ReplaceAllString(rest, "")
	}
	w.What = strings.TrimRight(strings.TrimSpace(rest), " .!,;:")
	switch {
	case w.What == "":
		w.Question = "What should I remind you of? Say it as “remind me to call the bank tomorrow at 10”."
	case w.At.IsZero():
		w.Question = "When should I remind you? Say “in 20 minutes”, “at 10”, “tomorrow at 10” or “every Monday at 9”."
	}
	return w
}

var (
	remindLead   = regexp.MustCompile(`(?i)^\s*(please\s+|can you\s+|could you\s+|would you\s+)*(remind me|set a reminder|reminder:?|remind)\b`)
	remindInside = regexp.MustCompile(`(?i)\s(please\s+)?remind me\b`)
	remindFiller = regexp.MustCompile(`(?i)^\s*(me\s+)?(to|that|about|of|for)\s+|\s+please\s*$`)
	remindIn     = regexp.MustCompile(`(?i)\s(?:in|after)\s+(\d+|an?|one|two|three|four|five|six|ten|fifteen|twenty|thirty|half an?)\s*(minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w)\b`)
	remindEvery  = regexp.MustCompile(`(?i)\s(?:every|each)\s+(day|morning|evening|night|monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|wed|thu|fri|sat|sun)\b`)
	remindDay    = regexp.MustCompile(`(?i)\s(?:on\s+|by\s+)?(today|tonight|tomorrow|tmrw|monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?:\s+(morning|afternoon|evening|night))?\b`)
	remindAt     = regexp.MustCompile(`(?i)\s(?:at|@|by)\s+(?:(noon|midday|midnight)|(\d{1,2})(?:[:.h](\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?)(?:\s|$)`)
)

var remindWeekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// remindDuration reads "20 minutes", "an hour", "half an hour".
func remindDuration(n, unit string) time.Duration {
	count := map[string]float64{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10,
		"fifteen": 15, "twenty": 20, "thirty": 30, "half a": 0.5, "half an": 0.5}[n]
	if v, err := strconv.Atoi(n); err == nil {
		count = float64(min(v, 10000))
	}
	var d time.Duration
	switch unit[0] {
	case 'm':
		d = time.Minute
	case 'h':
		d = time.Hour
	case 'd':
		d = 24 * time.Hour
	default:
		d = 7 * 24 * time.Hour
	}
	return time.Duration(count * float64(d))
}

// clockTime reads "noon", "10", "10:30", "3pm", "9.15 am".
func clockTime(word, h, m, ampm string) (int, int, bool) {
	switch word {
	case "noon", "midday":
		return 12, 0, true
	case "midnight":
		return 0, 0, true
	}
	hour, err := strconv.Atoi(h)
	if err != nil {
		return 0, 0, false
	}
	minute := 0
	if m != "" {
		minute, _ = strconv.Atoi(m)
	}
	switch strings.ReplaceAll(ampm, ".", "") {
	case "pm":
		if hour < 12 {
			hour += 12
		}
	case "am":
		if hour == 12 {
			hour = 0
		}
	}
	if hour > 23 || minute > 59 {
		return 0, 0, false
	}
	return hour, minute, true
}

func startOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// nextWeekday is the start of the next day that is wd, today included.
func nextWeekday(now time.Time, wd time.Weekday) time.Time {
	return startOfDay(now).AddDate(0, 0, (int(wd)-int(now.Weekday())+7)%7)
}
