package bot

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/crypto/olm"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
)

// EncryptionConfig is the end-to-end encryption part of the bot's config.
type EncryptionConfig struct {
	// Enabled turns end-to-end encryption on: the dedicated room and the
	// direct rooms Jarvis creates are encrypted, and Jarvis reads and
	// answers in encrypted rooms.
	Enabled bool
	// PickleKey encrypts Jarvis's olm account and megolm sessions in its
	// database.
	PickleKey string
}

// GeneratePickleKey, as the pickle key, asks for a fresh one: `jarvis run`
// writes a random key in its place in the configuration file before it
// starts (config.GenerateSecrets), as the mautrix bridges do.
const GeneratePickleKey = "generate"

// MinPickleKey is the fewest characters a pickle key has.
const MinPickleKey = 32

// stateCrossSigned records that Jarvis generated its cross-signing keys
// and signed its device with them, so that happens once.
const stateCrossSigned = "cross_signed"

// undecryptableReply is what Jarvis answers to a message it cannot
// decrypt, even after asking for the keys.
const undecryptableReply = "I could not read your last message; please send it again."

// initCrypto sets up the olm machine on the logged-in client: the crypto
// store and the room state store live in Jarvis's own database, and the
// device is the one login kept, so the keys stay across restarts.
func (b *Bot) initCrypto(ctx context.Context) error {
	if !b.cfg.Encryption.Enabled {
		return nil
	}
	if b.crypto == nil {
		if b.deps.DB == nil {
			return errors.New("encryption is on but the bot has no database for its keys")
		}
		if err := b.checkPickleKeyLength(ctx); err != nil {
			return err
		}
		rooms := newRoomStateStore(b.deps.DB, dbutil.ZeroLogger(b.log.With().Str("db_section", "matrix_state").Logger()))
		if err := rooms.Upgrade(ctx); err != nil {
			return fmt.Errorf("upgrade the room state store: %w", err)
		}
		b.Client.StateStore = rooms
		helper, err := cryptohelper.NewCryptoHelper(b.Client, []byte(b.cfg.Encryption.PickleKey), b.deps.DB)
		if err != nil {
			return fmt.Errorf("set up encryption: %w", err)
		}
		// The helper keeps a room state store it makes up to date itself;
		// this one is Jarvis's.
		b.Client.Syncer.(mautrix.ExtensibleSyncer).OnEvent(b.Client.StateStoreSyncHandler)
		helper.DecryptErrorCallback = b.onUndecryptable
		b.crypto = helper
	}
	if err := b.crypto.Init(ctx); err != nil {
		if errors.Is(err, olm.ErrBadMAC) {
			// The stored olm account does not decrypt with this key: the
			// key was changed, or the database was restored from a
			// workspace that had another one.
			return permanentError{core.Invalid("bot.encryption.pickle_key",
				"does not decrypt Jarvis's keys stored in the database (%v): it is not the key they were saved with. "+
					"Start with the key this database was used with; if it is lost, see \"Backups\" in docs/operating.md", err)}
		}
		var httpErr mautrix.HTTPError
		if !errors.As(err, &httpErr) {
			// Not the homeserver being away: a pickle key that does not
			// open the stored keys, or a device that is not the one the
			// keys belong to. Trying again would not help.
			return permanentError{fmt.Errorf("set up encryption: %w", err)}
		}
		return fmt.Errorf("set up encryption: %w", err)
	}
	b.Client.Crypto = b.crypto
	if err := b.crossSign(ctx); err != nil {
		// Messages are encrypted without it; people just cannot verify
		// Jarvis through cross-signing yet. The next start tries again.
		b.log.Err(err).Msg("Failed to set up cross-signing; trying again on the next start")
	}
	return nil
}

// crossSign generates the cross-signing keys and signs Jarvis's device
// with them, on the first start only. Uploading the keys needs the
// password (user-interactive auth); without one it is skipped with a
// warning. The recovery key is logged once: it is the only way to get the
// cross-signing keys back.
func (b *Bot) crossSign(ctx context.Context) error {
	done, err := b.deps.State.State(ctx, stateCrossSigned)
	if err != nil || done != "" {
		return err
	}
	if b.cfg.Password == "" {
		b.log.Warn().Msg("No bot.password: not generating cross-signing keys (uploading them needs the password)")
		return nil
	}
	mach := b.crypto.Machine()
	recoveryKey, _, err := mach.GenerateAndUploadCrossSigningKeysWithPassword(ctx, b.cfg.Password, "")
	if err != nil {
		return fmt.Errorf("generate cross-signing keys: %w", err)
	}
	if err := mach.SignOwnDevice(ctx, mach.OwnIdentity()); err != nil {
		return fmt.Errorf("sign own device: %w", err)
	}
	if err := mach.SignOwnMasterKey(ctx); err != nil {
		return fmt.Errorf("sign own master key: %w", err)
	}
	b.log.Warn().Str("recovery_key", recoveryKey).
		Msg("Generated cross-signing keys. Write the recovery key down now: it is shown this once and never again")
	return b.deps.State.SetState(ctx, stateCrossSigned, "yes")
}

// onUndecryptable runs when a message stays unreadable after the keys
// were requested and waited for. It never stays silent: the sender gets
// one reply, keyed by the event so a replayed sync does not repeat it.
func (b *Bot) onUndecryptable(evt *event.Event, cause error) {
	content := evt.Content.AsEncrypted()
	log := b.log.With().
		Str("room_id", evt.RoomID.String()).
		Str("event_id", evt.ID.String()).
		Str("sender", evt.Sender.String()).
		Str("session_id", content.SessionID.String()).
		//lint:ignore SA1019 senders that follow Matrix before v1.3 (Dendrite among them) still name their device here
		Str("sender_device", content.DeviceID.String()).
		Logger()
	log.Warn().Err(cause).Msg("Could not decrypt a message")
	if evt.Sender == b.Client.UserID || !b.deps.Policy.Allowed(evt.Sender.String()) || !b.leader() {
		return
	}
	ctx := log.WithContext(context.Background())
	err := b.deps.Outbox.Enqueue(ctx, core.Notice{
		Key:         "undecryptable:" + evt.ID.String(),
		RoomID:      evt.RoomID.String(),
		Kind:        core.NoticeMessage,
		Body:        undecryptableReply,
		TargetEvent: evt.ID.String(),
	})
	if err != nil && !errors.Is(err, core.ErrDuplicate) {
		zerolog.Ctx(ctx).Err(err).Msg("Failed to queue the could-not-read reply")
	}
}

// decrypted returns evt readable: itself when it is not encrypted, its
// decryption when Jarvis holds the session, nil when it cannot read it.
func (b *Bot) decrypted(ctx context.Context, evt *event.Event) *event.Event {
	if evt.Type != event.EventEncrypted {
		return evt
	}
	if b.crypto == nil {
		return nil
	}
	if err := evt.Content.ParseRaw(evt.Type); err != nil && !errors.Is(err, event.ErrContentAlreadyParsed) {
		return nil
	}
	out, err := b.crypto.Decrypt(ctx, evt)
	if err != nil {
		return nil
	}
	return out
}

// encryptionState is the initial state that makes a new room encrypted,
// or nothing when encryption is off.
func (b *Bot) encryptionState() []*event.Event {
	if !b.cfg.Encryption.Enabled {
		return nil
	}
	stateKey := ""
	return []*event.Event{{
		Type:     event.StateEncryption,
		StateKey: &stateKey,
		Content:  event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}},
	}}
}

// checkPickleKeyLength refuses a pickle key shorter than MinPickleKey for
// a database that holds no keys yet. A database whose keys were already
// saved with a shorter key keeps it, with a warning at every start: the
// key cannot change without losing them.
func (b *Bot) checkPickleKeyLength(ctx context.Context) error {
	key := b.cfg.Encryption.PickleKey
	if len(key) >= MinPickleKey {
		return nil
	}
	var accounts int
	// No table yet is a fresh database too.
	if err := b.deps.DB.QueryRow(ctx, "SELECT COUNT(*) FROM crypto_account").Scan(&accounts); err != nil || accounts == 0 {
		return permanentError{core.Invalid("bot.encryption.pickle_key",
			"is %d characters, fewer than %d: write `generate` and Jarvis writes a fresh random key in its place on its next start",
			len(key), MinPickleKey)}
	}
	b.log.Warn().Int("characters", len(key)).Int("fewest", MinPickleKey).
		Msg("bot.encryption.pickle_key is shorter than a new database accepts; this database's keys were saved with it, so it stays")
	return nil
}
