package store

import "time"

// Times are kept as unix milliseconds, the zero time as 0.

// millis is t in unix milliseconds, 0 for the zero time.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// timeOf reads unix milliseconds in UTC, 0 as the zero time.
func timeOf(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
