package bot

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

// syncer wraps mautrix's syncer so that the sync token is stored only
// after a response has been fully handled: a crash mid-response replays
// it, and the handled-events table keeps the replay from acting twice.
type syncer struct {
	*mautrix.DefaultSyncer
	bot   *Bot
	fails int
	// downSince is when the current run of failed syncs began; catchUpFrom,
	// when set, is where the catch-up after the homeserver came back reads
	// from, until one succeeds.
	downSince, catchUpFrom time.Time
	// delivered holds the timeline events that syncs handed over lately,
	// with their timestamps in milliseconds: the catch-up acts on the
	// others alone.
	delivered map[id.EventID]int64
	// tokenSavedAt is when the sync token was last stored.
	tokenSavedAt time.Time
}

// tokenSaveEvery bounds how long the stored sync token stays behind while
// responses carry nothing to act on: a restart reads that much again.
const tokenSaveEvery = time.Minute

func (s *syncer) ProcessResponse(ctx context.Context, res *mautrix.RespSync, since string) error {
	if !s.bot.leader() {
		// The lease was lost: handle nothing, store no token, so the
		// instance that holds the lease now picks up right here.
		return errNotLeader
	}
	if s.delivered == nil {
		s.delivered = map[id.EventID]int64{}
	}
	for _, room := range res.Rooms.Join {
		for _, evt := range room.Timeline.Events {
			s.delivered[evt.ID] = evt.Timestamp
		}
	}
	// Nothing said in a room before Jarvis joined it is acted on. Should
	// the join not be recorded, the response fails whole and its token is
	// not stored: the next sync brings it again.
	if err := s.bot.dropHistory(ctx, res); err != nil {
		return fmt.Errorf("record when Jarvis joined a room: %w", err)
	}
	// An event not acted on for a reason that may pass fails the response
	// whole: its token is not stored, and the next sync brings the event
	// again (the handled-events table keeps the others from being acted on
	// twice).
	tracked, notHandled := core.TrackNotHandled(ctx)
	if err := s.DefaultSyncer.ProcessResponse(tracked, res, since); err != nil {
		return err
	}
	if err := notHandled(); err != nil {
		return fmt.Errorf("an event was not handled: %w", err)
	}
	if err := s.saveToken(ctx, res, since); err != nil {
		return err
	}
	if e := s.bot.log.Debug(); e.Enabled() {
		var events []string
		for _, room := range res.Rooms.Join {
			for _, evt := range room.Timeline.Events {
				events = append(events, evt.Type.Type+" "+evt.ID.String())
			}
		}
		e.Str("since", since).Str("next_batch", res.NextBatch).Strs("timeline", events).Msg("Handled a sync response")
	}
	if s.fails > 0 {
		// The homeserver is back: what waits in the outbox goes now, not
		// when its back-off would have ended.
		if err := s.bot.deps.Outbox.RetryNow(ctx); err != nil {
			s.bot.log.Err(err).Msg("Failed to retry the outbox after reconnecting")
		}
		if s.catchUpFrom.IsZero() || s.downSince.Add(-catchUpWindow).Before(s.catchUpFrom) {
			s.catchUpFrom = s.downSince.Add(-catchUpWindow)
		}
	}
	s.fails = 0
	if !s.catchUpFrom.IsZero() {
		if err := s.bot.catchUp(ctx, s.catchUpFrom, res.NextBatch, s.delivered); err != nil {
			s.bot.log.Warn().Err(err).Msg("Failed to read the rooms again after the homeserver came back; trying after the next sync")
		} else {
			s.catchUpFrom = time.Time{}
		}
	}
	if s.catchUpFrom.IsZero() {
		// Older than any catch-up reads back from the next time.
		oldest := s.bot.deps.Clock.Now().Add(-2 * catchUpWindow).UnixMilli()
		maps.DeleteFunc(s.delivered, func(_ id.EventID, ts int64) bool { return ts < oldest })
	}
	s.bot.mu.Lock()
	s.bot.lastSync = s.bot.deps.Clock.Now()
	s.bot.syncErr = ""
	s.bot.mu.Unlock()
	if s.bot.deps.Synced != nil {
		s.bot.deps.Synced()
	}
	return nil
}

// saveToken stores the token of a handled response, unless the response
// carried nothing Jarvis acts on (its own messages, or nothing at all) and
// the stored token is less than tokenSaveEvery old: read again after a
// restart, such a response changes nothing. Each message Jarvis sends
// comes back in one such response, and its token was a write on a
// person's path.
func (s *syncer) saveToken(ctx context.Context, res *mautrix.RespSync, since string) error {
	now := s.bot.deps.Clock.Now()
	if since != "" && nothingToActOn(res, s.bot.Client.UserID) && now.Sub(s.tokenSavedAt) < tokenSaveEvery {
		return nil
	}
	if err := s.bot.deps.State.SetState(ctx, stateNextBatch, res.NextBatch); err != nil {
		return err
	}
	s.tokenSavedAt = now
	return nil
}

// nothingToActOn reports whether a sync response carries no event but
// Jarvis's own messages, which every handler ignores: no one else's
// timeline event, no state, receipt, typing or account data in any room,
// no invite, leave or knock, and nothing for its devices.
func nothingToActOn(res *mautrix.RespSync, self id.UserID) bool {
	if len(res.AccountData.Events)+len(res.Presence.Events)+len(res.ToDevice.Events) > 0 || !res.DeviceLists.IsZero() ||
		len(res.Rooms.Leave)+len(res.Rooms.Invite)+len(res.Rooms.Knock) > 0 {
		return false
	}
	for _, room := range res.Rooms.Join {
		if len(room.State.Events)+len(room.Ephemeral.Events)+len(room.AccountData.Events)+len(room.Sticky.Events) > 0 ||
			room.StateAfter != nil && len(room.StateAfter.Events) > 0 ||
			slices.ContainsFunc(room.Timeline.Events, func(evt *event.Event) bool { return evt.Sender != self || evt.StateKey != nil }) {
			return false
		}
	}
	return true
}

// OnFailedSync backs off from 500 ms doubling to 5 s while the homeserver
// is away; an invalid token stops the loop.
func (s *syncer) OnFailedSync(_ *mautrix.RespSync, err error) (time.Duration, error) {
	if errors.Is(err, mautrix.MUnknownToken) {
		return 0, err
	}
	if s.fails == 0 {
		s.downSince = s.bot.deps.Clock.Now()
	}
	s.fails++
	s.bot.mu.Lock()
	s.bot.syncErr = err.Error()
	s.bot.mu.Unlock()
	delay := min(500*time.Millisecond<<min(s.fails-1, 4), 5*time.Second)
	s.bot.log.Warn().Err(err).Dur("retry_in", delay).Msg("Sync failed")
	return delay, nil
}

// firstStart returns when this Jarvis first started on its database,
// recording now on the very first start; Prepare records it, before
// Jarvis joins or creates a room.
func (b *Bot) firstStart(ctx context.Context) (time.Time, error) {
	value, err := b.deps.State.State(ctx, stateFirstStart)
	if err != nil {
		return time.Time{}, err
	}
	if ms, err := strconv.ParseInt(value, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	now := b.deps.Clock.Now()
	return now, b.deps.State.SetState(ctx, stateFirstStart, strconv.FormatInt(now.UnixMilli(), 10))
}

// errNotLeader stops the sync loop while another Jarvis holds the lease.
var errNotLeader = errors.New("workspace lease not held")

func (b *Bot) leader() bool { return b.deps.Leader == nil || b.deps.Leader() }

// waitLeader waits until this Jarvis holds the workspace lease.
func (b *Bot) waitLeader(ctx context.Context) error {
	logged := false
	for !b.leader() {
		if !logged {
			b.log.Info().Msg("Not holding the workspace lease: staying mute")
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if logged {
		b.log.Info().Msg("Holding the workspace lease: listening")
	}
	return nil
}

// syncStore keeps the filter ID in the store; the sync token is saved by
// syncer.ProcessResponse once a response is handled, not before.
type syncStore struct{ state StateStore }

func (s syncStore) SaveFilterID(ctx context.Context, _ id.UserID, filterID string) error {
	return s.state.SetState(ctx, stateFilterID, filterID)
}
func (s syncStore) LoadFilterID(ctx context.Context, _ id.UserID) (string, error) {
	return s.state.State(ctx, stateFilterID)
}
func (s syncStore) SaveNextBatch(context.Context, id.UserID, string) error { return nil }
func (s syncStore) LoadNextBatch(ctx context.Context, _ id.UserID) (string, error) {
	return s.state.State(ctx, stateNextBatch)
}

// runSync syncs until ctx ends.
func (b *Bot) runSync(ctx context.Context) error {
	inner := b.syncer.DefaultSyncer
	// The very first sync of a new Jarvis carries history; it acts on
	// nothing from before Jarvis first started. It can also carry what
	// was said in the dedicated room after Jarvis created it, while it
	// was still starting: that is after the mark, and answered.
	born, err := b.firstStart(ctx)
	if err != nil {
		return err
	}
	inner.OnSync(func(_ context.Context, res *mautrix.RespSync, since string) bool {
		if since == "" {
			dropFromTimelines(res, func(evt *event.Event) bool { return evt.Timestamp < born.UnixMilli() })
		}
		dropFromTimelines(res, ownEncrypted(b.Client.UserID))
		return true
	})
	inner.OnEventType(event.StateMember, b.onMember)
	inner.OnEventType(event.EventMessage, b.onMessage)
	inner.OnEventType(event.EventReaction, b.onReaction)
	for _, typ := range []event.Type{event.StateBridge, event.StateHalfShotBridge, event.StateBeeperRoomFeatures} {
		inner.OnEventType(typ, b.onRoomFeatures)
	}
	for {
		if err := b.waitLeader(ctx); err != nil {
			return nil
		}
		err := b.Client.SyncWithContext(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, mautrix.MUnknownToken) {
			return err
		}
		if errors.Is(err, errNotLeader) {
			continue
		}
		b.log.Warn().Err(err).Msg("Sync stopped, restarting")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// ownEncrypted matches Jarvis's own encrypted messages, which a sync
// response drops before they are decrypted: every handler ignores what
// Jarvis said itself, and decrypting each echo of what it sends cost a
// decryption and three writes to the crypto store, on a person's path as
// on every notice's.
func ownEncrypted(self id.UserID) func(*event.Event) bool {
	return func(evt *event.Event) bool { return evt.Type == event.EventEncrypted && evt.Sender == self }
}

// dropFromTimelines takes the events drop matches out of the timelines of
// a sync response's joined rooms.
func dropFromTimelines(res *mautrix.RespSync, drop func(*event.Event) bool) {
	for _, room := range res.Rooms.Join {
		room.Timeline.Events = slices.DeleteFunc(room.Timeline.Events, drop)
	}
}

// eventContext adds the event's room, ID and sender to the logger.
func (b *Bot) eventContext(ctx context.Context, evt *event.Event) context.Context {
	log := b.log.With().
		Str("room_id", evt.RoomID.String()).
		Str("event_id", evt.ID.String()).
		Str("sender", evt.Sender.String()).
		Logger()
	return log.WithContext(ctx)
}

// onMember accepts invites from allowed people and declines the rest.
func (b *Bot) onMember(ctx context.Context, evt *event.Event) {
	// Who is in a room says whether it is a direct room.
	b.onRoomFeatures(ctx, evt)
	content := evt.Content.AsMember()
	if evt.GetStateKey() != b.cfg.UserID || content.Membership != event.MembershipInvite {
		return
	}
	ctx = b.eventContext(ctx, evt)
	log := zerolog.Ctx(ctx)
	if !b.deps.Policy.Allowed(evt.Sender.String()) {
		log.Info().Msg("Declining invite from someone not allowed")
		if _, err := b.Client.LeaveRoom(ctx, evt.RoomID); err != nil {
			log.Err(err).Msg("Failed to decline invite")
		}
		return
	}
	if _, err := b.Client.JoinRoomByID(ctx, evt.RoomID); err != nil {
		log.Err(err).Msg("Failed to join room after invite")
		return
	}
	if content.IsDirect {
		if err := b.deps.Outbox.SetDirectRoom(ctx, evt.Sender.String(), evt.RoomID.String()); err != nil {
			log.Err(err).Msg("Failed to record direct room")
		}
	}
	log.Info().Bool("direct", content.IsDirect).Msg("Joined room after invite")
}

// onMessage hands messages from allowed people to the command processor.
func (b *Bot) onMessage(ctx context.Context, evt *event.Event) {
	if evt.Sender.String() == b.cfg.UserID {
		return
	}
	if !b.deps.Policy.Allowed(evt.Sender.String()) {
		return
	}
	content := evt.Content.AsMessage()
	if content.RelatesTo.GetReplaceID() != "" {
		return // edits of earlier messages are not new commands
	}
	metrics.SyncLag.Set(b.deps.Clock.Now().Sub(time.UnixMilli(evt.Timestamp)).Seconds())
	ctx = b.eventContext(ctx, evt)
	msg, err := b.message(ctx, evt, content.Body)
	if err != nil {
		zerolog.Ctx(ctx).Err(err).Msg("Failed to tell who sent a message")
		core.NotHandled(ctx, err)
		return
	}
	msg.Addressed = msg.Room.Direct || b.mentioned(content)
	rel := content.RelatesTo
	msg.ThreadRoot = rel.GetThreadParent().String()
	if strings.HasPrefix(strings.TrimSpace(msg.Body), b.deps.Processor.Prefix()) || rel.GetReplyTo() == "" && msg.ThreadRoot == "" {
		b.deps.Processor.Handle(ctx, msg)
		return
	}
	msg.Body = stripReplyFallback(msg.Body)
	if replyTo := rel.GetNonFallbackReplyTo(); replyTo != "" {
		b.deps.Processor.HandleReply(ctx, msg, replyTo.String())
		return
	}
	// In a thread, replying to nothing in particular: m.in_reply_to, if
	// any, is only the fallback for clients without threads.
	b.deps.Processor.HandleInThread(ctx, msg, msg.ThreadRoot, rel.GetReplyTo().String())
}

// onReaction hands reactions from allowed people to the processor as
// answers to the notice they react to.
func (b *Bot) onReaction(ctx context.Context, evt *event.Event) {
	if evt.Sender.String() == b.cfg.UserID || !b.deps.Policy.Allowed(evt.Sender.String()) {
		return
	}
	rel := evt.Content.AsReaction().RelatesTo
	if rel.Type != event.RelAnnotation || rel.EventID == "" {
		return
	}
	ctx = b.eventContext(ctx, evt)
	msg, err := b.message(ctx, evt, rel.Key)
	if err != nil {
		zerolog.Ctx(ctx).Err(err).Msg("Failed to tell who sent a reaction")
		core.NotHandled(ctx, err)
		return
	}
	b.deps.Processor.HandleAnswer(ctx, msg, rel.EventID.String())
}

// message describes an event for the processor: who the sender is (a
// native user, a puppet and the account it is linked to, a relay bot),
// how far their text is trusted, and what the room lets them do.
func (b *Bot) message(ctx context.Context, evt *event.Event, body string) (commands.Message, error) {
	room, err := b.roomInfo(ctx, evt.RoomID)
	if err != nil {
		return commands.Message{}, err
	}
	// The dedicated room is shared, even while one person is in it.
	room.Direct = room.Direct && evt.RoomID.String() != b.RoomID()
	who, err := b.deps.Policy.Identify(ctx, evt.Sender.String(), body, room)
	if err != nil {
		return commands.Message{}, err
	}
	if who.Relay {
		// Relay-mode messages come from people whose reactions the bridge
		// drops: assume none.
		room.NoReactions = true
		body = relayBody(body)
	}
	return commands.Message{
		RoomID:      evt.RoomID.String(),
		EventID:     evt.ID.String(),
		Sender:      who.UserID,
		Puppet:      who.Puppet,
		Network:     who.Network,
		Relay:       who.Relay,
		RelayedName: who.RelayedName,
		Trust:       who.Trust(),
		Room:        room,
		Body:        body,
		Sent:        time.UnixMilli(evt.Timestamp),
	}, nil
}

// mentioned reports whether a message mentions Jarvis: in m.mentions, or
// as a pill or its user ID in the text (clients without m.mentions).
func (b *Bot) mentioned(content *event.MessageEventContent) bool {
	if content.Mentions != nil && content.Mentions.Has(id.UserID(b.cfg.UserID)) {
		return true
	}
	return strings.Contains(content.Body, b.cfg.UserID) || strings.Contains(content.FormattedBody, b.cfg.UserID) ||
		strings.Contains(content.FormattedBody, url.PathEscape(b.cfg.UserID))
}

// relayBody drops the "Name: " a relay bot puts before the text.
func relayBody(body string) string {
	if _, rest, ok := strings.Cut(body, ": "); ok && !strings.Contains(body[:len(body)-len(rest)], "\n") {
		return rest
	}
	return body
}

// stripReplyFallback removes the "> quoted" lines older clients put in
// front of a reply's body.
func stripReplyFallback(body string) string {
	lines := strings.Split(body, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], ">") {
		i++
	}
	return strings.TrimSpace(strings.Join(lines[i:], "\n"))
}
