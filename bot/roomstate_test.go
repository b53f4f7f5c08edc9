package bot

import (
	"context"
	"testing"

	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// TestRoomEncryptionReadOnce: once a room is known to be encrypted, asking
// again reads nothing (a change made behind the store's back is not
// seen); a new encryption event replaces what is kept; a room not
// encrypted is read each time, so that it is seen when it becomes so.
func TestRoomEncryptionReadOnce(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	rooms := newRoomStateStore(st.DB, dbutil.NoopLogger)
	if err := rooms.Upgrade(ctx); err != nil {
		t.Fatal(err)
	}
	const encrypted, plain = id.RoomID("!encrypted:example.org"), id.RoomID("!plain:example.org")
	behind := func(room id.RoomID, content string) {
		t.Helper()
		if _, err := st.DB.Exec(ctx, `INSERT INTO mx_room_state (room_id, encryption) VALUES ($1, $2)
			ON CONFLICT (room_id) DO UPDATE SET encryption = excluded.encryption`, room, content); err != nil {
			t.Fatal(err)
		}
	}
	rotation := func(room id.RoomID) int {
		t.Helper()
		content, err := rooms.GetEncryptionEvent(ctx, room)
		if err != nil || content == nil {
			t.Fatalf("encryption of %s = %v, %v; want settings", room, content, err)
		}
		return content.RotationPeriodMessages
	}

	if err := rooms.SetEncryptionEvent(ctx, encrypted, &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1, RotationPeriodMessages: 100}); err != nil {
		t.Fatal(err)
	}
	if on, err := rooms.IsEncrypted(ctx, encrypted); !on || err != nil {
		t.Fatalf("IsEncrypted = %v, %v; want true", on, err)
	}
	behind(encrypted, `{"algorithm":"m.megolm.v1.aes-sha2","rotation_period_msgs":5}`)
	if got := rotation(encrypted); got != 100 {
		t.Errorf("after a change behind the store, rotation %d read, want the 100 kept: it read the database again", got)
	}
	if err := rooms.SetEncryptionEvent(ctx, encrypted, &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1, RotationPeriodMessages: 50}); err != nil {
		t.Fatal(err)
	}
	if got := rotation(encrypted); got != 50 {
		t.Errorf("after a new encryption event, rotation %d, want 50", got)
	}

	if on, err := rooms.IsEncrypted(ctx, plain); on || err != nil {
		t.Fatalf("IsEncrypted(plain) = %v, %v; want false", on, err)
	}
	behind(plain, `{"algorithm":"m.megolm.v1.aes-sha2"}`)
	if on, err := rooms.IsEncrypted(ctx, plain); !on || err != nil {
		t.Errorf("a room that became encrypted: IsEncrypted = %v, %v; want true", on, err)
	}
}
