// Package chart draws a source's history as a PNG: the values over a span,
// the threshold a tripwire watches as a line (or the watched states
// shaded), and the trip marked; and says in words what the picture shows,
// for bridges that drop images and for screen readers.
package chart

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
)

// The picture's size: 800 × 400 pixels.
const (
	Width  = 800
	Height = 400
	dpi    = 96
)

// Chart is what to draw.
type Chart struct {
	// Title names the chart, e.g. the tripwire's label.
	Title string
	// Source names what the values are, e.g. "integrity.gi"; Unit says
	// what they measure ("ratio", "seconds"), or nothing.
	Source string
	Unit   string
	// Points are the source's history over From–To, oldest first.
	Points   []history.Point
	From, To time.Time
	// Thresholds are drawn as lines; Watched values of a source of states
	// are shaded where the source showed them.
	Thresholds []float64
	Watched    []string
	// TripAt, when set, marks the trip.
	TripAt time.Time
	// Location is the time zone of the axis (UTC when nil).
	Location *time.Location
	// Series, when set, are drawn side by side instead of Points, each
	// as a line with its Watched spans shaded (a fleet's agents).
	Series []Series
}

// Series is one line of a chart of several: numbers over time, and the
// states of a second source whose Watched spans are shaded in the line's
// colour (an agent's MII, and when it was offline).
type Series struct {
	Name   string
	Points []history.Point
	Shade  []history.Point
}

// seriesColors tell a chart's series apart, in turn.
var seriesColors = []color.NRGBA{
	{R: 0x1f, G: 0x6f, B: 0xb4, A: 0xff}, {R: 0xe6, G: 0x7e, B: 0x22, A: 0xff}, {R: 0x2e, G: 0x8b, B: 0x57, A: 0xff},
	{R: 0x8e, G: 0x44, B: 0xad, A: 0xff}, {R: 0x7f, G: 0x8c, B: 0x8d, A: 0xff}, {R: 0xc0, G: 0x39, B: 0x2b, A: 0xff},
}

var (
	lineColor      = color.NRGBA{R: 0x1f, G: 0x6f, B: 0xb4, A: 0xff}
	bandColor      = color.NRGBA{R: 0x1f, G: 0x6f, B: 0xb4, A: 0x40}
	thresholdColor = color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
	shadeColor     = color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0x30}
	tripColor      = color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
)

// Render draws the chart as a PNG of Width × Height pixels.
func Render(c Chart) ([]byte, error) {
	loc := c.location()
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "time (" + zoneName(loc, c.To) + ")"
	p.Y.Label.Text = c.Source
	if c.Unit != "" {
		p.Y.Label.Text += " (" + c.Unit + ")"
	}
	p.X.Min, p.X.Max = unix(c.From), unix(c.To)
	p.X.Tick.Marker = timeTicks{loc: loc, span: c.To.Sub(c.From)}
	p.Add(plotter.NewGrid())
	var err error
	switch {
	case len(c.Series) > 0:
		err = c.drawSeries(p)
	case c.numeric():
		err = c.drawNumbers(p)
	default:
		err = c.drawStates(p)
	}
	if err != nil {
		return nil, err
	}
	canvas := vgimg.NewWith(vgimg.UseWH(vg.Length(Width)*vg.Inch/dpi, vg.Length(Height)*vg.Inch/dpi), vgimg.UseDPI(dpi))
	p.Draw(draw.New(canvas))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: canvas}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode chart: %w", err)
	}
	return buf.Bytes(), nil
}

func (c Chart) location() *time.Location {
	if c.Location == nil {
		return time.UTC
	}
	return c.Location
}

// numeric reports whether the values are numbers (an empty history draws
// as numbers, with its thresholds).
func (c Chart) numeric() bool {
	for _, pt := range c.Points {
		if _, ok := pt.Value.(float64); !ok {
			return false
		}
	}
	return true
}

func (c Chart) drawNumbers(p *plot.Plot) error {
	line := make(plotter.XYs, 0, len(c.Points))
	var band []plotter.XYZ // x, min, max
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range c.Points {
		v := pt.Value.(float64)
		line = append(line, plotter.XY{X: unix(pt.At), Y: v})
		lo, hi = min(lo, v), max(hi, v)
		if pt.Bucket && pt.Min != pt.Max {
			lo, hi = min(lo, pt.Min), max(hi, pt.Max)
			band = append(band, plotter.XYZ{X: unix(pt.At), Y: pt.Min, Z: pt.Max})
		}
	}
	for _, t := range c.Thresholds {
		lo, hi = min(lo, t), max(hi, t)
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	pad := (hi - lo) * 0.1
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.1, 0.1)
	}
	// Room above the values for the legend.
	p.Y.Min, p.Y.Max = lo-pad, hi+3*pad
	// Buckets older than two days show their range as a band.
	if len(band) > 0 {
		outline := make(plotter.XYs, 0, 2*len(band))
		for _, xy := range band {
			outline = append(outline, plotter.XY{X: xy.X, Y: xy.Y})
		}
		for i := len(band) - 1; i >= 0; i-- {
			outline = append(outline, plotter.XY{X: band[i].X, Y: band[i].Z})
		}
		poly, err := plotter.NewPolygon(outline)
		if err != nil {
			return err
		}
		poly.Color, poly.LineStyle.Width = bandColor, 0
		p.Add(poly)
		p.Legend.Add("5-minute range", poly)
	}
	for _, t := range c.Thresholds {
		th, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: t}, {X: p.X.Max, Y: t}})
		if err != nil {
			return err
		}
		th.Color, th.Width, th.Dashes = thresholdColor, vg.Points(1.5), []vg.Length{vg.Points(6), vg.Points(4)}
		p.Add(th)
		p.Legend.Add("threshold "+formatNumber(t), th)
	}
	if len(line) > 0 {
		l, err := plotter.NewLine(line)
		if err != nil {
			return err
		}
		l.Color, l.Width = lineColor, vg.Points(2)
		p.Add(l)
		p.Legend.Add(c.Source, l)
	}
	if pt, ok := c.tripPoint(); ok {
		v, _ := pt.Value.(float64)
		return c.markTrip(p, v)
	}
	p.Legend.Top = true
	return nil
}

// drawSeries draws each series as a line in its colour, the spans its
// Shade source showed a Watched state shaded in a paler one.
func (c Chart) drawSeries(p *plot.Plot) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, pt := range s.Points {
			if v, ok := pt.Value.(float64); ok {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	pad := max((hi-lo)*0.1, 0.05)
	// Room above the values for the legend.
	p.Y.Min, p.Y.Max = lo-pad, hi+3*pad
	for i, s := range c.Series {
		col := seriesColors[i%len(seriesColors)]
		pale := col
		pale.A = 0x30
		spans := watchedSpans(s.Shade, c.Watched, c.To)
		for _, span := range spans {
			if _, err := shadeSpan(p, span, pale); err != nil {
				return err
			}
		}
		// The line breaks where a shaded span begins between two
		// readings: nothing was heard there to draw.
		var lines []plotter.XYs
		var prev time.Time
		for _, pt := range s.Points {
			v, ok := pt.Value.(float64)
			if !ok {
				continue
			}
			if len(lines) == 0 || slices.ContainsFunc(spans, func(sp [2]time.Time) bool { return sp[0].After(prev) && !sp[0].After(pt.At) }) {
				lines = append(lines, nil)
			}
			lines[len(lines)-1] = append(lines[len(lines)-1], plotter.XY{X: unix(pt.At), Y: v})
			prev = pt.At
		}
		for j, xys := range lines {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			l.Color, l.Width = col, vg.Points(2)
			p.Add(l)
			if j == 0 {
				p.Legend.Add(s.Name, l)
			}
		}
	}
	p.Legend.Top = true
	return nil
}

// drawStates draws a source of states as steps between one row per state,
// the watched states shaded over the time the source showed them.
func (c Chart) drawStates(p *plot.Plot) error {
	states := slices.Clone(c.Watched)
	for _, pt := range c.Points {
		if s := stateText(pt.Value); !slices.Contains(states, s) {
			states = append(states, s)
		}
	}
	level := func(v any) float64 { return float64(slices.Index(states, stateText(v))) }
	p.Y.Min, p.Y.Max = -0.5, float64(len(states))-0.5
	ticks := make([]plot.Tick, len(states))
	for i, s := range states {
		ticks[i] = plot.Tick{Value: float64(i), Label: s}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	for i, span := range watchedSpans(c.Points, c.Watched, c.To) {
		shade, err := shadeSpan(p, span, shadeColor)
		if err != nil {
			return err
		}
		if i == 0 {
			p.Legend.Add(strings.Join(c.Watched, " or "), shade)
		}
	}
	var steps plotter.XYs
	for i, pt := range c.Points {
		if i > 0 {
			steps = append(steps, plotter.XY{X: unix(pt.At), Y: level(c.Points[i-1].Value)})
		}
		steps = append(steps, plotter.XY{X: unix(pt.At), Y: level(pt.Value)})
	}
	if len(steps) > 0 {
		steps = append(steps, plotter.XY{X: p.X.Max, Y: steps[len(steps)-1].Y})
		l, err := plotter.NewLine(steps)
		if err != nil {
			return err
		}
		l.Color, l.Width = lineColor, vg.Points(2)
		p.Add(l)
	}
	if pt, ok := c.tripPoint(); ok {
		return c.markTrip(p, level(pt.Value))
	}
	return nil
}

// shadeSpan shades the plot's full height over span.
func shadeSpan(p *plot.Plot, span [2]time.Time, col color.Color) (*plotter.Polygon, error) {
	shade, err := plotter.NewPolygon(plotter.XYs{
		{X: unix(span[0]), Y: p.Y.Min}, {X: unix(span[1]), Y: p.Y.Min}, {X: unix(span[1]), Y: p.Y.Max}, {X: unix(span[0]), Y: p.Y.Max}})
	if err != nil {
		return nil, err
	}
	shade.Color, shade.LineStyle.Width = col, 0
	p.Add(shade)
	return shade, nil
}

// watchedSpans are the stretches of time points showed a watched state,
// each from the reading that began it to the next reading that did not
// (or to).
func watchedSpans(points []history.Point, watched []string, to time.Time) [][2]time.Time {
	var spans [][2]time.Time
	open := false
	for _, pt := range points {
		watched := slices.Contains(watched, stateText(pt.Value))
		switch {
		case watched && !open:
			spans, open = append(spans, [2]time.Time{pt.At, to}), true
		case !watched && open:
			spans[len(spans)-1][1], open = pt.At, false
		}
	}
	return spans
}

func (c Chart) markTrip(p *plot.Plot, y float64) error {
	s, err := plotter.NewScatter(plotter.XYs{{X: unix(c.TripAt), Y: y}})
	if err != nil {
		return err
	}
	s.GlyphStyle.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = tripColor, vg.Points(6), draw.CircleGlyph{}
	p.Add(s)
	p.Legend.Add("tripped "+c.TripAt.In(c.location()).Format("15:04"), s)
	p.Legend.Top = true
	return nil
}

// tripPoint is the reading the trip was decided on: the last one at or
// before TripAt.
func (c Chart) tripPoint() (history.Point, bool) {
	if c.TripAt.IsZero() {
		return history.Point{}, false
	}
	i, _ := slices.BinarySearchFunc(c.Points, c.TripAt, func(p history.Point, t time.Time) int {
		if p.At.After(t) {
			return 1
		}
		return -1
	})
	if i == 0 {
		return history.Point{}, false
	}
	return c.Points[i-1], true
}

// Describe says in words what the chart shows: "integrity.gi from 09:00 to
// 09:00 UTC, 288 readings: lowest 0.62, highest 0.95, last 0.62. The line
// marks the threshold 0.7. Tripped at 08:55 at 0.62."
func (c Chart) Describe() string {
	loc := c.location()
	var b strings.Builder
	layout := "Jan 2 15:04"
	fmt.Fprintf(&b, "Chart of %s from %s to %s %s", c.Source, c.From.In(loc).Format(layout), c.To.In(loc).Format(layout), zoneName(loc, c.To))
	if len(c.Series) > 0 {
		b.WriteString(".")
		c.describeSeries(&b)
		return b.String()
	}
	if len(c.Points) == 0 {
		b.WriteString(": no readings in that time.")
	} else if c.numeric() {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, pt := range c.Points {
			v := pt.Value.(float64)
			lo, hi = min(lo, v), max(hi, v)
			if pt.Bucket {
				lo, hi = min(lo, pt.Min), max(hi, pt.Max)
			}
		}
		fmt.Fprintf(&b, ", %s: lowest %s, highest %s, last %s.", core.Plural(len(c.Points), "reading", "readings"), formatNumber(lo), formatNumber(hi),
			formatNumber(c.Points[len(c.Points)-1].Value.(float64)))
	} else {
		changes := 0
		for i := 1; i < len(c.Points); i++ {
			if stateText(c.Points[i].Value) != stateText(c.Points[i-1].Value) {
				changes++
			}
		}
		fmt.Fprintf(&b, ", %s, %s of state, last %s.", core.Plural(len(c.Points), "reading", "readings"), core.Plural(changes, "change", "changes"), stateText(c.Points[len(c.Points)-1].Value))
	}
	switch {
	case len(c.Thresholds) == 1:
		fmt.Fprintf(&b, " The red line marks the threshold %s.", formatNumber(c.Thresholds[0]))
	case len(c.Thresholds) > 1:
		parts := make([]string, len(c.Thresholds))
		for i, t := range c.Thresholds {
			parts[i] = formatNumber(t)
		}
		fmt.Fprintf(&b, " The red lines mark the thresholds %s.", strings.Join(parts, ", "))
	}
	if len(c.Watched) > 0 {
		fmt.Fprintf(&b, " Shaded: when it was %s.", strings.Join(c.Watched, " or "))
	}
	if pt, ok := c.tripPoint(); ok {
		fmt.Fprintf(&b, " Tripped at %s at %s.", c.TripAt.In(loc).Format("15:04"), stateText(pt.Value))
	}
	return b.String()
}

// describeSeries says, per series, its lowest, highest and last value and
// how often its Shade source entered a watched state.
func (c Chart) describeSeries(b *strings.Builder) {
	for _, s := range c.Series {
		fmt.Fprintf(b, " %s: ", s.Name)
		lo, hi, last, n := math.Inf(1), math.Inf(-1), 0.0, 0
		for _, pt := range s.Points {
			if v, ok := pt.Value.(float64); ok {
				lo, hi, last, n = min(lo, v), max(hi, v), v, n+1
			}
		}
		if n == 0 {
			b.WriteString("no readings")
		} else {
			fmt.Fprintf(b, "%s, lowest %s, highest %s, last %s", core.Plural(n, "reading", "readings"), formatNumber(lo), formatNumber(hi), formatNumber(last))
		}
		if spans := watchedSpans(s.Shade, c.Watched, c.To); len(spans) > 0 {
			fmt.Fprintf(b, "; %s %s (shaded)", strings.Join(c.Watched, " or "), core.Plural(len(spans), "time", "times"))
		}
		b.WriteString(".")
	}
}

func unix(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

// timeTicks marks whole hours in the chart's time zone: every 3 hours
// over a day or less, every day (at midnight) beyond, every 5 days beyond
// two weeks.
type timeTicks struct {
	loc  *time.Location
	span time.Duration
}

func (t timeTicks) Ticks(lo, hi float64) []plot.Tick {
	step, format := 3*time.Hour, "15:04"
	switch {
	case t.span > 14*24*time.Hour:
		step, format = 5*24*time.Hour, "Jan 2"
	case t.span > 36*time.Hour:
		step, format = 24*time.Hour, "Jan 2"
	}
	start := time.Unix(int64(lo), 0).In(t.loc)
	first := time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, t.loc)
	var ticks []plot.Tick
	minor := step / 3
	for at := first; unix(at) <= hi; at = at.Add(minor) {
		if unix(at) < lo {
			continue
		}
		tick := plot.Tick{Value: unix(at)}
		if at.Sub(first)%step == 0 {
			tick.Label = at.Format(format)
		}
		ticks = append(ticks, tick)
	}
	return ticks
}

func zoneName(loc *time.Location, at time.Time) string {
	if loc == time.UTC {
		return "UTC"
	}
	name, _ := at.In(loc).Zone()
	return name
}

func formatNumber(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func stateText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return formatNumber(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// Draw draws what a chart request (history.Chart as JSON) asks for, from
// the history it names, in loc's time zone (UTC when nil), and says in
// words what the picture shows.
func Draw(ctx context.Context, h history.Store, request string, loc *time.Location) ([]byte, string, error) {
	var req history.Chart
	if err := json.Unmarshal([]byte(request), &req); err != nil {
		return nil, "", fmt.Errorf("read chart request: %w", err)
	}
	to := req.To.Add(time.Millisecond)
	c := Chart{Title: req.Title, Source: req.Source.String(), Unit: req.Unit, From: req.From, To: req.To,
		Thresholds: req.Thresholds, Watched: req.Watched, TripAt: req.TripAt, Location: loc}
	var err error
	if len(req.Series) == 0 {
		if c.Points, err = h.Points(ctx, req.Source, req.From, to); err != nil {
			return nil, "", err
		}
	}
	for _, s := range req.Series {
		series := Series{Name: s.Name}
		if series.Points, err = h.Points(ctx, s.Values, req.From, to); err != nil {
			return nil, "", err
		}
		if s.Shade.Kind != "" {
			if series.Shade, err = h.Points(ctx, s.Shade, req.From, to); err != nil {
				return nil, "", err
			}
		}
		c.Series = append(c.Series, series)
	}
	png, err := Render(c)
	if err != nil {
		return nil, "", err
	}
	return png, c.Describe(), nil
}
