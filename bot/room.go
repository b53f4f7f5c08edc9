package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// ensureRoom joins the dedicated room, creating it (with name, topic, and
// the admins invited) when its alias does not exist yet.
func (b *Bot) ensureRoom(ctx context.Context) error {
	room := b.cfg.Room
	if strings.HasPrefix(room, "!") {
		if _, err := b.Client.JoinRoomByID(ctx, id.RoomID(room)); err != nil {
			return fmt.Errorf("join %s: %w", room, err)
		}
		return b.setRoom(ctx, id.RoomID(room))
	}
	resolved, err := b.Client.ResolveAlias(ctx, id.RoomAlias(room))
	switch {
	case err == nil:
		if _, err := b.Client.JoinRoomByID(ctx, resolved.RoomID); err != nil {
			return fmt.Errorf("join %s: %w", room, err)
		}
		return b.setRoom(ctx, resolved.RoomID)
	case !errors.Is(err, mautrix.MNotFound):
		return fmt.Errorf("resolve %s: %w", room, err)
	}
	localpart, _, _ := strings.Cut(strings.TrimPrefix(room, "#"), ":")
	invite := make([]id.UserID, 0, len(b.cfg.Admins))
	power := map[id.UserID]int{id.UserID(b.cfg.UserID): 100}
	for _, admin := range b.cfg.Admins {
		invite = append(invite, id.UserID(admin))
		power[id.UserID(admin)] = 100
	}
	created, err := b.Client.CreateRoom(ctx, &mautrix.ReqCreateRoom{
		RoomAliasName:      localpart,
		Name:               "Jarvis",
		Topic:              "Talk to Jarvis: tripwires, fleet status, breakers, cards. Say !help.",
		Preset:             "private_chat",
		Invite:             invite,
		PowerLevelOverride: &event.PowerLevelsEventContent{Users: power},
		InitialState:       b.encryptionState(),
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", room, err)
	}
	b.log.Info().Str("room_id", created.RoomID.String()).Str("alias", room).Msg("Created the dedicated room")
	return b.setRoom(ctx, created.RoomID)
}

func (b *Bot) setRoom(ctx context.Context, roomID id.RoomID) error {
	b.mu.Lock()
	b.roomID = roomID
	b.mu.Unlock()
	return b.deps.State.SetState(ctx, StateRoomID, roomID.String())
}

// directRoom returns the direct room Jarvis shares with a person,
// creating it and inviting them on first need.
func (b *Bot) directRoom(ctx context.Context, userID string) (id.RoomID, error) {
	roomID, err := b.deps.Outbox.DirectRoom(ctx, userID)
	if err == nil {
		return id.RoomID(roomID), nil
	}
	// A homeserver may make the room, and invite nobody, for a user who
	// does not exist (Dendrite does): ask for the person's profile first.
	// Only "no such user" counts; a homeserver that keeps profiles to
	// those who share a room answers otherwise, and the room is made.
	if _, err := b.Client.GetProfile(ctx, id.UserID(userID)); errors.Is(err, mautrix.MNotFound) {
		return "", fmt.Errorf("no direct room with %s: %w", userID, err)
	}
	created, err := b.Client.CreateRoom(ctx, &mautrix.ReqCreateRoom{
		Preset:       "trusted_private_chat",
		IsDirect:     true,
		Invite:       []id.UserID{id.UserID(userID)},
		Name:         "Jarvis",
		InitialState: b.encryptionState(),
	})
	if err != nil {
		return "", fmt.Errorf("create direct room with %s: %w", userID, err)
	}
	if err := b.deps.Outbox.SetDirectRoom(ctx, userID, created.RoomID.String()); err != nil {
		return "", err
	}
	return created.RoomID, nil
}

// Join joins a room Jarvis posts into besides its own (a tier of
// oncall.escalation), by ID or alias, and returns its ID.
func (b *Bot) Join(ctx context.Context, room string) (string, error) {
	resp, err := b.Client.JoinRoom(ctx, room, nil)
	if err != nil {
		return "", fmt.Errorf("join %s: %w", room, err)
	}
	return resp.RoomID.String(), nil
}
