package chart

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/history"
)

var end = time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)

// gi is a day of GI every 5 minutes, dipping below 0.7 at the end.
func gi() []history.Point {
	var pts []history.Point
	for i := range 288 {
		v := 0.85 + 0.08*math.Sin(float64(i)/20)
		if i > 270 {
			v = 0.62
		}
		pts = append(pts, history.Point{At: end.Add(-24*time.Hour + time.Duration(i)*5*time.Minute), Value: math.Round(v*1000) / 1000})
	}
	return pts
}

func agentStatus() []history.Point {
	var pts []history.Point
	for i := range 96 {
		s := "online"
		switch {
		case i >= 40 && i < 44:
			s = "late"
		case i >= 44 && i < 60:
			s = "offline"
		}
		pts = append(pts, history.Point{At: end.Add(-24*time.Hour + time.Duration(i)*15*time.Minute), Value: s})
	}
	return pts
}

// mii is a day of an agent's MII every 15 minutes around base, with no
// heartbeats from the quarter-hour from to the one before to.
func mii(base float64, from, to int) []history.Point {
	var pts []history.Point
	for i := range 96 {
		if i >= from && i < to {
			continue
		}
		v := base + 0.04*math.Sin(float64(i)/8)
		pts = append(pts, history.Point{At: end.Add(-24*time.Hour + time.Duration(i)*15*time.Minute), Value: math.Round(v*1000) / 1000})
	}
	return pts
}

func charts() map[string]Chart {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	week := func() []history.Point {
		var pts []history.Point
		for i := range 7 * 288 {
			v := 40 + 5*math.Sin(float64(i)/100)
			p := history.Point{At: end.Add(-7*24*time.Hour + time.Duration(i)*5*time.Minute), Value: v}
			if i < 5*288 {
				p.Bucket, p.Min, p.Max = true, v-1.5, v+1
			}
			pts = append(pts, p)
		}
		return pts
	}
	return map[string]Chart{
		"gi-trip": {Title: "GI below yellow band", Source: "integrity.gi", Unit: "ratio", Points: gi(), From: end.Add(-24 * time.Hour), To: end,
			Thresholds: []float64{0.7}, TripAt: end.Add(-85 * time.Minute)},
		"agent-offline": {Title: "EVE offline", Source: "agent.status[EVE]", Points: agentStatus(), From: end.Add(-24 * time.Hour), To: end,
			Watched: []string{"offline"}, TripAt: end.Add(-24*time.Hour + 44*15*time.Minute), Location: berlin},
		"vault-week": {Title: "Vault above 45", Source: "vault.balance", Points: week(), From: end.Add(-7 * 24 * time.Hour), To: end,
			Thresholds: []float64{45}},
		"fleet-mii": {Title: "MII per agent", Source: "agent.mii", Unit: "ratio", From: end.Add(-24 * time.Hour), To: end, Watched: []string{"offline"},
			Series: []Series{{Name: "EVE", Points: mii(0.9, 44, 60), Shade: agentStatus()}, {Name: "WALL-E", Points: mii(0.8, 0, 0)}, {Name: "HAL"}}},
		"empty": {Title: "Nothing read yet", Source: "vault.balance", From: end.Add(-24 * time.Hour), To: end, Thresholds: []float64{45}},
	}
}

// TestRender draws each chart and checks it is a PNG of Width × Height;
// with JARVIS_CHART_DIR set it writes them there to look at.
func TestRender(t *testing.T) {
	dir := os.Getenv("JARVIS_CHART_DIR")
	for name, c := range charts() {
		t.Run(name, func(t *testing.T) {
			b, err := Render(c)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("not a PNG: %v", err)
			}
			if got := img.Bounds().Size(); got.X != Width || got.Y != Height {
				t.Errorf("PNG is %d × %d, want %d × %d", got.X, got.Y, Width, Height)
			}
			if dir != "" {
				if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	c := charts()
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"gi-trip", []string{"Chart of integrity.gi from Nov 30 14:00 to Dec 1 14:00 UTC", "288 readings: lowest 0.62, highest 0.93", "last 0.62",
			"The red line marks the threshold 0.7.", "Tripped at 12:35 at 0.62."}},
		{"agent-offline", []string{"from Nov 30 15:00 to Dec 1 15:00 CET", "96 readings, 3 changes of state, last online",
			"Shaded: when it was offline.", "Tripped at 02:00 at offline."}},
		{"empty", []string{"no readings in that time.", "threshold 45."}},
		{"fleet-mii", []string{"Chart of agent.mii from Nov 30 14:00 to Dec 1 14:00 UTC.", "EVE: 80 readings, lowest 0.86, highest 0.94, last 0.",
			"; offline 1 time (shaded).", "WALL-E: 96 readings", "HAL: no readings."}},
	} {
		got := c[tt.name].Describe()
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: Describe() = %q, want %q in it", tt.name, got, w)
			}
		}
	}
}

// BenchmarkRender draws the chart a trip notice carries: a day of
// 5-minute readings, a threshold and the trip.
func BenchmarkRender(b *testing.B) {
	c := charts()["gi-trip"]
	for b.Loop() {
		if _, err := Render(c); err != nil {
			b.Fatal(err)
		}
	}
}
