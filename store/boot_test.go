package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/watchdog"
)

// TestJarvisBoots: boots are read back newest first with their clean
// stops, and only the newest watchdog.KeepBoots are kept.
func TestJarvisBoots(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, testEngine)
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	for i := range watchdog.KeepBoots + 2 {
		if err := st.RecordBoot(ctx, watchdog.Boot{ID: fmt.Sprintf("boot-%04d", i), Host: "h", Version: "v", StartedAt: at.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	last := fmt.Sprintf("boot-%04d", watchdog.KeepBoots+1)
	if err := st.MarkStopped(ctx, last, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	all, err := st.BootsSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != watchdog.KeepBoots || all[0].ID != last || !all[0].StoppedAt.Equal(at.Add(time.Hour)) || !all[1].StoppedAt.IsZero() {
		t.Errorf("%d boots, newest %+v, then %+v; want %d, the newest stopped cleanly", len(all), all[0], all[1], watchdog.KeepBoots)
	}
	recent, err := st.BootsSince(ctx, at.Add(time.Duration(watchdog.KeepBoots)*time.Second))
	if err != nil || len(recent) != 2 {
		t.Errorf("boots since the last two = %d (%v), want 2", len(recent), err)
	}
}
