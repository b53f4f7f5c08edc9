// Package history keeps what the tripwire evaluator reads from each source:
// every reading at full resolution for FullResolution, then one bucket per
// BucketWidth (its minimum, maximum and last value) until the configured
// retention. Charts and backtests read it back.
package history

import (
	"context"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// How readings age: full resolution for two days, then 5-minute buckets.
const (
	FullResolution = 48 * time.Hour
	BucketWidth    = 5 * time.Minute
)

// Config says how long history is kept.
type Config struct {
	// Retention is how long a source's history is kept, buckets included.
	Retention time.Duration
	// TimeZone is the IANA name of the time zone charts show times in
	// ("Europe/Berlin"); UTC when empty.
	TimeZone string
}

// Validate checks that history outlives its full resolution and that the
// time zone is known.
func (c Config) Validate() error {
	if c.Retention < FullResolution {
		return core.Invalid("history.retention", "must be at least %s, got %s", core.ShortDuration(FullResolution), c.Retention)
	}
	if _, err := c.Location(); err != nil {
		return core.Invalid("history.time_zone", "%v", err)
	}
	return nil
}

// Location is the time zone charts show times in.
func (c Config) Location() (*time.Location, error) {
	if c.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(c.TimeZone)
}

// Reading is one value a source gave at one time: a float64, a string or a
// bool.
type Reading struct {
	Source core.SourceRef
	At     time.Time
	Value  any
}

// Point is one stored point of a source's history: a reading, or (older
// than FullResolution) a bucket, whose At is its start and Value its last
// value; a bucket of numbers also has its Min and Max.
type Point struct {
	At     time.Time
	Value  any
	Bucket bool
	Min    float64
	Max    float64
}

// Chart asks for a chart of a source's history: what a trip notice's
// image shows, drawn when the notice is sent, from the history of From–To,
// which stays as it was.
type Chart struct {
	Title  string         `json:"title"`
	Source core.SourceRef `json:"source"`
	// Unit says what the values measure ("ratio", "seconds"), or nothing.
	Unit string    `json:"unit,omitempty"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Thresholds are drawn as lines; Watched states are shaded.
	Thresholds []float64 `json:"thresholds,omitempty"`
	Watched    []string  `json:"watched,omitempty"`
	// TripAt marks the trip, when set.
	TripAt time.Time `json:"trip_at,omitzero"`
	// Series, when set, are drawn side by side instead of Source.
	Series []Series `json:"series,omitempty"`
}

// Series is one of several sources a chart draws side by side: Values as
// a line called Name, with the times its Shade source showed one of the
// chart's Watched states shaded (an agent's MII, and when it was offline).
type Series struct {
	Name   string         `json:"name"`
	Values core.SourceRef `json:"values"`
	Shade  core.SourceRef `json:"shade,omitzero"`
}

// ChartSpan is how much history a trip's chart shows.
const ChartSpan = 24 * time.Hour

// Store reads a source's history.
type Store interface {
	// Points returns the points of src from from up to (not including)
	// to, oldest first.
	Points(ctx context.Context, src core.SourceRef, from, to time.Time) ([]Point, error)
	// Latest returns at most limit of the newest of those points, oldest
	// first.
	Latest(ctx context.Context, src core.SourceRef, from, to time.Time, limit int) ([]Point, error)
}

// Keepable returns v when a history can keep it (a finite float64, a
// string or a bool), and false otherwise.
func Keepable(v any) (any, bool) {
	switch v.(type) {
	case float64, string, bool:
		return core.NormalizeValue(v)
	}
	return nil, false
}

// Values turns points into the values a replay reads, in time order: a
// reading as itself, a bucket of numbers as its minimum, maximum and last
// value at its start, a bucket of other values as its last value.
func Values(points []Point) []Reading {
	out := make([]Reading, 0, len(points))
	for _, p := range points {
		if !p.Bucket {
			out = append(out, Reading{At: p.At, Value: p.Value})
			continue
		}
		if _, num := p.Value.(float64); num {
			out = append(out, Reading{At: p.At, Value: p.Min}, Reading{At: p.At.Add(time.Second), Value: p.Max})
		}
		out = append(out, Reading{At: p.At.Add(2 * time.Second), Value: p.Value})
	}
	return out
}
