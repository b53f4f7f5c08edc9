package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestSmallTables exercises the queries of the small tables (excerpts,
// pending confirmations, identity links, bot state) on both engines: the
// pruning subquery with LIMIT, RETURNING, booleans and upserts.
func TestSmallTables(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	at := time.UnixMilli(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC).UnixMilli())

	t.Run("excerpts keep the newest and ratify the held", func(t *testing.T) {
		var held int64
		for i := range core.ExcerptKeep + 3 {
			id, err := s.AddExcerpt(ctx, core.Excerpt{RoomID: "!r", Sender: "@a", EventID: "$e", Body: "m",
				Trust: core.Trust("external"), Held: i == core.ExcerptKeep+2, At: at.Add(time.Duration(i) * time.Second)})
			if err != nil {
				t.Fatalf("add %d: %v", i, err)
			}
			held = id
		}
		list, err := s.Excerpts(ctx, "!r", "@a", 100)
		if err != nil || len(list) != core.ExcerptKeep {
			t.Fatalf("excerpts: %d (%v), want %d", len(list), err, core.ExcerptKeep)
		}
		if last := list[len(list)-1]; last.ID != held || !last.Held || !last.At.Equal(at.Add(time.Duration(core.ExcerptKeep+2)*time.Second)) {
			t.Errorf("newest excerpt %+v, want id %d held", last, held)
		}
		if err := s.RatifyExcerpt(ctx, held, "@a", "@admin"); err != nil {
			t.Fatalf("ratify: %v", err)
		}
		if err := s.RatifyExcerpt(ctx, held, "@a", "@admin"); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("ratify twice: %v, want ErrNotFound", err)
		}
		if n, err := s.ClearExcerpts(ctx, "!r"); err != nil || n != core.ExcerptKeep {
			t.Errorf("clear: %d %v", n, err)
		}
	})

	t.Run("model turns are taken once, oldest listed first", func(t *testing.T) {
		for i, id := range []string{"$t2", "$t1"} {
			if err := s.AddModelTurn(ctx, core.ModelTurn{EventID: id, RoomID: "!r", Sender: "@a", Message: `{"Body":"hi"}`,
				Started: at.Add(-time.Duration(i) * time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.AddModelTurn(ctx, core.ModelTurn{EventID: "$t1", RoomID: "!r", Sender: "@a", Started: at}); err != nil {
			t.Fatalf("a turn recorded twice: %v", err)
		}
		list, err := s.ModelTurns(ctx)
		if err != nil || len(list) != 2 || list[0].EventID != "$t1" || list[0].Message != `{"Body":"hi"}` || !list[0].Started.Equal(at.Add(-time.Second)) {
			t.Fatalf("turns %+v (%v)", list, err)
		}
		if ok, err := s.TakeModelTurn(ctx, "$t1"); err != nil || !ok {
			t.Fatalf("take: %v %v", ok, err)
		}
		if ok, _ := s.TakeModelTurn(ctx, "$t1"); ok {
			t.Error("a turn taken twice")
		}
	})

	t.Run("pending confirmations resolve once and clear by room", func(t *testing.T) {
		for _, key := range []string{"p1", "p2", "p3"} {
			if err := s.AddPending(ctx, core.Pending{Key: key, Kind: "tripwire", RoomID: "!r", Requester: "@a",
				CreatedAt: at, ExpiresAt: at.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := s.ResolvePending(ctx, "p1", "confirmed", at); err != nil || !ok {
			t.Fatalf("resolve: %v %v", ok, err)
		}
		if ok, _ := s.ResolvePending(ctx, "p1", "dismissed", at); ok {
			t.Error("resolved twice")
		}
		counts, err := s.ClearPending(ctx, "!r", at)
		if err != nil || counts["tripwire"] != 2 {
			t.Errorf("clear: %v %v, want 2 tripwire", counts, err)
		}
		p, err := s.GetPending(ctx, "p1")
		if err != nil || p.Resolution != "confirmed" || !p.ResolvedAt.Equal(at) {
			t.Errorf("p1 = %+v %v", p, err)
		}
		if _, err := s.GetPending(ctx, "nope"); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("missing: %v", err)
		}
	})

	t.Run("link codes are bound, counted, taken once; links never overwritten", func(t *testing.T) {
		if err := s.AddLinkCode(ctx, core.LinkCode{Code: "ABCDEFGH", From: "@telegram_1:x", Network: "telegram", Redeemer: "@a:x", ExpiresAt: at}); err != nil {
			t.Fatal(err)
		}
		for want := 1; want <= 2; want++ {
			if tries, err := s.MissLinkCode(ctx, "ABCDEFGH"); err != nil || tries != want {
				t.Fatalf("miss %d: %d %v", want, tries, err)
			}
		}
		if c, err := s.GetLinkCode(ctx, "ABCDEFGH"); err != nil || c.Redeemer != "@a:x" || c.Tries != 2 {
			t.Fatalf("get: %+v %v", c, err)
		}
		c, err := s.TakeLinkCode(ctx, "ABCDEFGH")
		if err != nil || c.From != "@telegram_1:x" || c.Redeemer != "@a:x" || !c.ExpiresAt.Equal(at) {
			t.Fatalf("take: %+v %v", c, err)
		}
		if _, err := s.TakeLinkCode(ctx, "ABCDEFGH"); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("take twice: %v", err)
		}
		if _, err := s.MissLinkCode(ctx, "ABCDEFGH"); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("miss on a taken code: %v", err)
		}
		for i := range 3 {
			if err := s.AddLinkFailure(ctx, "@m:x", at.Add(time.Duration(i)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := s.LinkFailures(ctx, "@m:x", at); err != nil || n != 2 {
			t.Errorf("failures after the first: %d %v, want 2", n, err)
		}
		if err := s.PutLink(ctx, core.IdentityLink{Puppet: "@telegram_1:x", Account: "@a:x", Network: "telegram", LinkedAt: at}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutLink(ctx, core.IdentityLink{Puppet: "@telegram_1:x", Account: "@b:x", Network: "telegram", LinkedAt: at}); !errors.Is(err, core.ErrDuplicate) {
			t.Errorf("relinking: %v, want ErrDuplicate", err)
		}
		if got, err := s.LinkedAccount(ctx, "@telegram_1:x"); err != nil || got != "@a:x" {
			t.Errorf("linked account %q %v, want @a:x", got, err)
		}
		if err := s.DeleteLink(ctx, "@telegram_1:x", "@b:x"); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("unlinking from another account: %v", err)
		}
		if err := s.DeleteLink(ctx, "@telegram_1:x", "@a:x"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LinkedAccount(ctx, "@telegram_1:x"); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("after unlinking: %v", err)
		}
	})

	t.Run("state upserts and events are handled once", func(t *testing.T) {
		for _, v := range []string{"1", "2"} {
			if err := s.SetState(ctx, "k", v); err != nil {
				t.Fatal(err)
			}
		}
		if v, err := s.State(ctx, "k"); err != nil || v != "2" {
			t.Errorf("state %q %v", v, err)
		}
		first, err := s.MarkHandled(ctx, "$e", at)
		again, err2 := s.MarkHandled(ctx, "$e", at)
		if err != nil || err2 != nil || !first || again {
			t.Errorf("mark handled: %v %v (%v %v), want true then false", first, again, err, err2)
		}
	})
}
