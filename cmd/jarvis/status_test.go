package main

import (
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/retention"
)

func TestRetentionLine(t *testing.T) {
	at := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		report retention.Report
		want   string
	}{
		{"nothing to remove", retention.Report{At: at},
			"retention: last pass 2026-12-01T15:00:00Z, 0 rows removed (0 sent messages, 0 handled events, 0 confirmations, 0 link codes, 0 journal entries, 0 agent boots and days of spend, 0 approval requests, 0 deleted tripwires, 0 heartbeats, 0 resolved incidents, 0 reminders and tasks, 0 consumed events)"},
		{"some of each", retention.Report{At: at, Notices: 500, Events: 3, Pending: 2, LinkCodes: 1, Journal: 7, Meter: 4, Approvals: 2, Tripwires: 1, Heartbeats: 3, Incidents: 4,
			Reminders: 5, Consumed: 6},
			"retention: last pass 2026-12-01T15:00:00Z, 538 rows removed (500 sent messages, 3 handled events, 2 confirmations, 1 link codes, 7 journal entries, 4 agent boots and days of spend, 2 approval requests, 1 deleted tripwires, 3 heartbeats, 4 resolved incidents, 5 reminders and tasks, 6 consumed events)"},
		{"failed part way", retention.Report{At: at, Notices: 1, Err: errors.New("prune handled events: disk I/O error")},
			"retention: last pass 2026-12-01T15:00:00Z, 1 row removed (1 sent messages, 0 handled events, 0 confirmations, 0 link codes, 0 journal entries, 0 agent boots and days of spend, 0 approval requests, 0 deleted tripwires, 0 heartbeats, 0 resolved incidents, 0 reminders and tasks, 0 consumed events), failed: prune handled events: disk I/O error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retentionLine(tt.report); got != tt.want {
				t.Errorf("retentionLine() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestGivenUpLine(t *testing.T) {
	last := core.OutboxEntry{Notice: core.Notice{Key: "push:tw_1:3", ToUser: "@ghost:example.org"},
		LastError: "no direct room with @ghost:example.org: M_NOT_FOUND (HTTP 404): The user does not exist",
		FailedAt:  time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)}
	want := "2 notices given up after 5 refusals in a row (kept, not retried); the latest, `push:tw_1:3` for `user:@ghost:example.org` at " +
		"2026-12-01T15:00:00Z: `no direct room with @ghost:example.org: M_NOT_FOUND (HTTP 404): The user does not exist`"
	if got := givenUpLine(2, last); got != want {
		t.Errorf("givenUpLine() =\n%s\nwant\n%s", got, want)
	}
}
