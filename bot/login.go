package bot

import (
	"context"
	"errors"
	"fmt"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"
)

// Keys of the bot's state in the store.
const (
	stateAccessToken = "access_token"
	stateDeviceID    = "device_id"
	stateUserID      = "user_id"
	stateNextBatch   = "next_batch"
	stateFilterID    = "filter_id"
	stateFirstStart  = "first_start"
)

// StateRoomID is the key of the dedicated room's ID in the bot's state: a
// console that holds the lease without Matrix sends the room's notices
// there, for the bot to deliver when it runs.
const StateRoomID = "room_id"

// login uses the configured access token, else the one stored from an
// earlier start, else a password login that reuses the stored device ID,
// so a restart never creates a new device.
func (b *Bot) login(ctx context.Context) error {
	if b.cfg.AccessToken != "" {
		return b.useToken(ctx, b.cfg.AccessToken)
	}
	token, err := b.deps.State.State(ctx, stateAccessToken)
	if err != nil {
		return err
	}
	user, err := b.deps.State.State(ctx, stateUserID)
	if err != nil {
		return err
	}
	if token != "" && user == b.cfg.UserID {
		err := b.useToken(ctx, token)
		if !errors.Is(err, mautrix.MUnknownToken) {
			return err
		}
		b.log.Warn().Msg("Stored access token was rejected, logging in again")
	}
	deviceID, err := b.deps.State.State(ctx, stateDeviceID)
	if err != nil {
		return err
	}
	resp, err := b.Client.Login(ctx, &mautrix.ReqLogin{
		Type:                     mautrix.AuthTypePassword,
		Identifier:               mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: b.cfg.UserID},
		Password:                 b.cfg.Password,
		DeviceID:                 id.DeviceID(deviceID),
		InitialDeviceDisplayName: b.cfg.DeviceName,
		StoreCredentials:         true,
	})
	if err != nil {
		return fmt.Errorf("password login: %w", err)
	}
	for key, value := range map[string]string{
		stateAccessToken: resp.AccessToken,
		stateDeviceID:    resp.DeviceID.String(),
		stateUserID:      resp.UserID.String(),
	} {
		if err := b.deps.State.SetState(ctx, key, value); err != nil {
			return err
		}
	}
	b.log.Info().Str("device_id", resp.DeviceID.String()).Msg("Logged in with password")
	return nil
}

func (b *Bot) useToken(ctx context.Context, token string) error {
	b.Client.AccessToken = token
	who, err := b.Client.Whoami(ctx)
	if err != nil {
		return fmt.Errorf("check access token: %w", err)
	}
	if who.UserID.String() != b.cfg.UserID {
		return fmt.Errorf("the access token belongs to %s, not bot.user_id %s", who.UserID, b.cfg.UserID)
	}
	b.Client.DeviceID = who.DeviceID
	return nil
}
