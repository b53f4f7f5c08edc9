package core_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

func TestPlanBatches(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	msg := func(key, room string, coalesce bool) core.OutboxEntry {
		return core.OutboxEntry{Notice: core.Notice{Key: key, RoomID: room, Kind: core.NoticeMessage, Body: "body of " + key, Coalesce: coalesce}}
	}
	later := msg("late", "!a", true)
	later.NextAttempt = now.Add(time.Minute)
	batched := msg("b1", "!a", true)
	batched.BatchKey = "batch:b1"
	batched2 := msg("b2", "!a", true)
	batched2.BatchKey = "batch:b1"
	urgent := func(key, room string) core.OutboxEntry {
		e := msg(key, room, true)
		e.Urgent = true
		return e
	}

	tests := []struct {
		name    string
		waiting []core.OutboxEntry
		want    [][]string // keys per batch
		txn     []string
	}{
		{"nothing waiting", nil, nil, nil},
		{"one notice", []core.OutboxEntry{msg("a", "!a", false)}, [][]string{{"a"}}, []string{"a"}},
		{"coalescible run in one room merges", []core.OutboxEntry{msg("a", "!a", true), msg("b", "!a", true), msg("c", "!a", true)},
			[][]string{{"a", "b", "c"}}, []string{"batch:a"}},
		{"a non-coalescible notice ends the run", []core.OutboxEntry{msg("a", "!a", true), msg("b", "!a", false), msg("c", "!a", true)},
			[][]string{{"a"}}, []string{"a"}},
		{"rooms are independent", []core.OutboxEntry{msg("a", "!a", false), msg("b", "!b", false), msg("c", "!a", false)},
			[][]string{{"a"}, {"b"}}, []string{"a", "b"}},
		{"a head backing off holds its room back", []core.OutboxEntry{later, msg("x", "!a", true), msg("y", "!b", false)},
			[][]string{{"y"}}, []string{"y"}},
		{"a fixed batch is resent as it was", []core.OutboxEntry{batched, batched2, msg("c", "!a", true)},
			[][]string{{"b1", "b2"}}, []string{"batch:b1"}},
		{"an urgent notice goes first, beside the flood's head, and merges only with urgent ones",
			[]core.OutboxEntry{msg("f1", "!a", true), msg("f2", "!a", true), urgent("u1", "!a"), msg("f3", "!a", true), urgent("u2", "!a")},
			[][]string{{"u1", "u2"}, {"f1", "f2", "f3"}}, []string{"batch:u1", "batch:f1"}},
		{"an urgent head backing off holds only its lane back", []core.OutboxEntry{
			func() core.OutboxEntry { e := urgent("u1", "!a"); e.NextAttempt = now.Add(time.Minute); return e }(),
			urgent("u2", "!a"), msg("f1", "!a", false)},
			[][]string{{"f1"}}, []string{"f1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batches := core.PlanBatches(tt.waiting, now)
			var got [][]string
			var txn []string
			for _, b := range batches {
				got = append(got, b.Keys())
				txn = append(txn, b.TxnKey)
			}
			if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(txn, tt.txn) {
				t.Errorf("batches = %v (txn %v), want %v (txn %v)", got, txn, tt.want, tt.txn)
			}
		})
	}
}

func TestPlanBatchesCapsCoalescing(t *testing.T) {
	var waiting []core.OutboxEntry
	for i := range core.MaxCoalesced + 5 {
		waiting = append(waiting, core.OutboxEntry{Notice: core.Notice{Key: string(rune('a' + i)), RoomID: "!a", Kind: core.NoticeMessage, Body: "x", Coalesce: true}})
	}
	batches := core.PlanBatches(waiting, time.Now())
	if len(batches) != 1 || len(batches[0].Entries) != core.MaxCoalesced {
		t.Fatalf("got %d batches, first of %d, want 1 of %d", len(batches), len(batches[0].Entries), core.MaxCoalesced)
	}
	if !batches[0].New {
		t.Error("a new batch must be marked New so its key is recorded before sending")
	}
	if body := batches[0].Body(); strings.Count(body, "x") != core.MaxCoalesced {
		t.Errorf("merged body has %d parts, want %d", strings.Count(body, "x"), core.MaxCoalesced)
	}
}

func TestNoticeValidate(t *testing.T) {
	tests := []struct {
		name  string
		n     core.Notice
		field string
	}{
		{"valid message", core.Notice{Key: "k", RoomID: "!r", Kind: core.NoticeMessage, Body: "hi"}, ""},
		{"to a person", core.Notice{Key: "k", ToUser: "@a:b", Kind: core.NoticeMessage, Body: "hi"}, ""},
		{"no key", core.Notice{RoomID: "!r", Kind: core.NoticeMessage, Body: "hi"}, "key"},
		{"nowhere", core.Notice{Key: "k", Kind: core.NoticeMessage, Body: "hi"}, "room_id"},
		{"empty body", core.Notice{Key: "k", RoomID: "!r", Kind: core.NoticeMessage, Body: "  "}, "body"},
		{"edit without target", core.Notice{Key: "k", RoomID: "!r", Kind: core.NoticeEdit, Body: "hi"}, "target"},
		{"coalescing reaction", core.Notice{Key: "k", RoomID: "!r", Kind: core.NoticeReaction, Body: "✅", Target: "t", Coalesce: true}, "coalesce"},
		{"unknown kind", core.Notice{Key: "k", RoomID: "!r", Kind: "shout", Body: "hi"}, "kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.n.Validate()
			var fe *core.FieldError
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.field != "" && (!asFieldError(err, &fe) || fe.Field != tt.field):
				t.Errorf("Validate() = %v, want an error naming %q", err, tt.field)
			}
		})
	}
}

func asFieldError(err error, fe **core.FieldError) bool {
	e, ok := err.(*core.FieldError)
	*fe = e
	return ok
}

func TestRetryDelay(t *testing.T) {
	for _, tt := range []struct {
		attempts int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {4, 8 * time.Second}, {30, 5 * time.Minute}} {
		if got := core.RetryDelay(tt.attempts); got != tt.want {
			t.Errorf("RetryDelay(%d) = %s, want %s", tt.attempts, got, tt.want)
		}
	}
}
