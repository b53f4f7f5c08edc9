package bot

import (
	"context"
	"sync"

	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/sqlstatestore"
)

// roomStateStore is mautrix's room state store in Jarvis's database, with
// each encrypted room's encryption settings kept in memory once read:
// every message sent asks whether its room is encrypted, and the answer
// was a database read on a person's path. A room's encryption cannot be
// turned off; a new m.room.encryption event replaces what is kept. A room
// not encrypted is read each time, since it may become encrypted.
type roomStateStore struct {
	*sqlstatestore.SQLStateStore

	mu sync.Mutex
	// encryption holds the settings read of encrypted rooms; changes
	// counts the settings written, so that a read begun before one does
	// not keep what it read.
	encryption map[id.RoomID]*event.EncryptionEventContent
	changes    int
}

func newRoomStateStore(db *dbutil.Database, log dbutil.DatabaseLogger) *roomStateStore {
	return &roomStateStore{SQLStateStore: sqlstatestore.NewSQLStateStore(db, log, false),
		encryption: map[id.RoomID]*event.EncryptionEventContent{}}
}

func (s *roomStateStore) GetEncryptionEvent(ctx context.Context, roomID id.RoomID) (*event.EncryptionEventContent, error) {
	s.mu.Lock()
	kept, ok := s.encryption[roomID]
	changes := s.changes
	s.mu.Unlock()
	if ok {
		return kept, nil
	}
	content, err := s.SQLStateStore.GetEncryptionEvent(ctx, roomID)
	if err != nil || content == nil {
		return content, err
	}
	s.mu.Lock()
	if s.changes == changes {
		s.encryption[roomID] = content
	}
	s.mu.Unlock()
	return content, nil
}

func (s *roomStateStore) IsEncrypted(ctx context.Context, roomID id.RoomID) (bool, error) {
	content, err := s.GetEncryptionEvent(ctx, roomID)
	return content != nil && content.Algorithm == id.AlgorithmMegolmV1, err
}

func (s *roomStateStore) SetEncryptionEvent(ctx context.Context, roomID id.RoomID, content *event.EncryptionEventContent) error {
	err := s.SQLStateStore.SetEncryptionEvent(ctx, roomID, content)
	s.mu.Lock()
	delete(s.encryption, roomID)
	s.changes++
	s.mu.Unlock()
	return err
}
