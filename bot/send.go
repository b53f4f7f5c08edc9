package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

// errTargetPending means an edit, reaction or thread reply waits for the
// notice it applies to.
var errTargetPending = errors.New("target not sent yet")

// outcomeSettle is how long a send whose outcome was lost stays unknown:
// it is sent again only when two looks in the room this far apart both
// miss it. A homeserver may list an event in /messages a while after it
// took it: Dendrite indexes events for /messages asynchronously, and after
// a crash it indexes what it had persisted only once it is back, so a
// look right after the restart misses a send it took as it died.
const outcomeSettle = 5 * time.Second

// unsettledError means that a look in the room missed an earlier attempt
// of the batch, and the next look is due at lookAgain.
type unsettledError struct{ lookAgain time.Time }

func (e *unsettledError) Error() string {
	return "an earlier attempt is not in the room yet; looking again at " + e.lookAgain.UTC().Format(time.RFC3339)
}

// lookError is a failed look in the room for an earlier attempt.
type lookError struct{ err error }

func (e *lookError) Error() string { return "look for an earlier attempt: " + e.err.Error() }
func (e *lookError) Unwrap() error { return e.err }

// matrixClient is what the sender asks of Matrix: send an event, read a
// room's recent events. *mautrix.Client is one; the sender's tests use a
// fake.
type matrixClient interface {
	SendMessageEvent(ctx context.Context, roomID id.RoomID, eventType event.Type, contentJSON any, extra ...mautrix.ReqSendEvent) (*mautrix.RespSendEvent, error)
	Messages(ctx context.Context, roomID id.RoomID, from, to string, dir mautrix.Direction, filter *mautrix.FilterPart, limit int) (*mautrix.RespMessages, error)
	UploadBytes(ctx context.Context, data []byte, contentType string) (*mautrix.RespMediaUpload, error)
}

// idleWait is how long the sender sleeps when nothing is due and nothing
// wakes it; waitingLimit is how many waiting notices it reads at once.
const (
	idleWait     = 5 * time.Second
	waitingLimit = 500
)

// runSender delivers the outbox until ctx ends: one loop, in outbox order
// per room, coalescing what waits for the same room.
func (b *Bot) runSender(ctx context.Context) {
	for {
		wait := b.sendDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-b.deps.Wake:
		case <-time.After(wait):
		}
	}
}

// sendDue sends every batch that is due and says how long to wait before
// looking again.
func (b *Bot) sendDue(ctx context.Context) time.Duration {
	waiting, err := b.deps.Outbox.Waiting(ctx, waitingLimit)
	if err != nil {
		b.log.Err(err).Msg("Failed to read the outbox")
		return time.Second
	}
	now := b.deps.Clock.Now()
	batches := core.PlanBatches(waiting, now)
	sent, sentNotices := 0, 0
	var retryAt time.Time
	// Someone waits for the urgent lanes' batches, which come first.
	waited := func() {}
	if len(batches) > 0 && batches[0].Entries[0].Urgent {
		waited = b.deps.Chat.Begin()
	}
	defer waited()
	for _, batch := range batches {
		if !batch.Entries[0].Urgent {
			waited()
		}
		if b.deps.Gate != nil {
			if err := b.deps.Gate(ctx); err != nil {
				b.log.Debug().Err(err).Msg("Holding the outbox back")
				return time.Second
			}
		}
		ok, next := b.deliver(ctx, batch)
		switch {
		case ok:
			sent++
			sentNotices += len(batch.Entries)
		case !next.IsZero() && (retryAt.IsZero() || next.Before(retryAt)):
			retryAt = next
		}
	}
	if sent > 0 {
		if sentNotices < len(waiting) || len(waiting) == waitingLimit {
			// What waited behind what went out may be due now.
			return 0
		}
		// Everything read went out; a notice enqueued since wakes the
		// sender when it commits.
		return idleWait
	}
	wait := idleWait
	if !retryAt.IsZero() {
		// What failed just now has its next attempt fixed after waiting
		// was read.
		wait = min(wait, max(0, retryAt.Sub(b.deps.Clock.Now())))
	}
	for _, e := range waiting {
		if d := e.NextAttempt.Sub(now); d > 0 && d < wait {
			wait = d
		}
	}
	return wait
}

// deliver sends one batch and records the outcome. It reports whether
// the batch is done with (it went out, or the homeserver refused it
// core.MaxRefusals times in a row and it was given up on) and, when a
// send failed, when to try again.
func (b *Bot) deliver(ctx context.Context, batch core.Batch) (sent bool, retryAt time.Time) {
	log := b.log.With().Str("notice", batch.TxnKey).Int("notices", len(batch.Entries)).Logger()
	if batch.New {
		if err := b.deps.Outbox.AssignBatch(ctx, batch); err != nil {
			log.Err(err).Msg("Failed to fix the batch before sending")
			return false, time.Time{}
		}
	}
	eventID, err := b.sendOnce(ctx, batch)
	if errors.Is(err, errTargetPending) {
		return false, time.Time{}
	}
	if unsettled := (*unsettledError)(nil); errors.As(err, &unsettled) {
		log.Info().Time("look_again", unsettled.lookAgain).Msg("An earlier attempt is not in the room; looking again before sending")
		if err := b.deps.Outbox.MarkFailed(ctx, batch.Keys(), err, unsettled.lookAgain); err != nil {
			log.Err(err).Msg("Failed to record when to look again")
		}
		return false, unsettled.lookAgain
	}
	now := b.deps.Clock.Now()
	if err != nil {
		metrics.SendErrors.Inc()
		head := batch.Entries[0]
		// A look in the room refused counts too: a room Jarvis may not
		// read it cannot post to either.
		refusal := refused(err)
		if refusal && head.Refusals+1 >= core.MaxRefusals {
			log.Error().Err(err).Str("destination", head.Destination()).Int("attempts", head.Attempts+1).
				Msg("The homeserver keeps refusing the notice; giving up on it")
			if err := b.deps.Outbox.GiveUp(ctx, batch.Keys(), err, now); err != nil {
				log.Err(err).Msg("Failed to record the notice given up")
				return false, time.Time{}
			}
			delete(b.refused, batch.TxnKey)
			delete(b.unsettled, batch.TxnKey)
			metrics.NoticesGivenUp.Add(float64(len(batch.Entries)))
			// What waits behind it for the same destination can go now.
			return true, time.Time{}
		}
		// Only a send says whether the homeserver made an event; a look
		// in the room that failed says nothing about the last send.
		switch {
		case errors.As(err, new(*lookError)):
		case answered(err):
			if b.refused == nil {
				b.refused = map[string]bool{}
			}
			b.refused[batch.TxnKey] = true
		default:
			delete(b.refused, batch.TxnKey)
		}
		next := now.Add(core.RetryDelay(head.Attempts + 1))
		var respErr mautrix.RespError
		if errors.As(err, &respErr) && respErr.StatusCode == 429 {
			if ms, ok := respErr.ExtraData["retry_after_ms"].(float64); ok {
				next = now.Add(time.Duration(ms) * time.Millisecond)
			}
		}
		log.Warn().Err(err).Time("next_attempt", next).Dur("retry_in", next.Sub(now)).Bool("refused", refusal).Msg("Failed to send notice")
		mark := b.deps.Outbox.MarkFailed
		if refusal {
			mark = b.deps.Outbox.MarkRefused
		}
		if err := mark(ctx, batch.Keys(), err, next); err != nil {
			log.Err(err).Msg("Failed to record send failure")
		}
		return false, next
	}
	if err := b.deps.Outbox.MarkSent(ctx, batch.Keys(), eventID.String(), now); err != nil {
		log.Err(err).Msg("Failed to record sent notice")
		return false, time.Time{}
	}
	delete(b.refused, batch.TxnKey)
	delete(b.unsettled, batch.TxnKey)
	metrics.NoticesSent.Add(float64(len(batch.Entries)))
	return true, time.Time{}
}

// noticeField carries the notice's transaction key in the content of
// every event Jarvis sends, so a send whose outcome was lost can be found.
const noticeField = "com.jarvis.notice"

// sendOnce sends a batch unless an earlier attempt, whose outcome was
// never recorded (Jarvis died mid-request), already delivered it: then it
// returns that event. The homeserver's transaction IDs cover most such
// cases, but not a request cut off while the homeserver was still
// handling it, nor one it took as it crashed. The batch is sent again
// only when two looks outcomeSettle apart miss it.
func (b *Bot) sendOnce(ctx context.Context, batch core.Batch) (id.EventID, error) {
	head := batch.Entries[0]
	if !head.AttemptStarted.IsZero() {
		roomID, err := b.roomOf(ctx, head)
		if err != nil {
			return "", err
		}
		found, err := b.findSent(ctx, roomID, batch.TxnKey)
		if err != nil {
			return "", &lookError{err: err}
		}
		if found != "" {
			b.log.Info().Str("notice", batch.TxnKey).Str("event_id", found.String()).Msg("An earlier attempt was delivered; not sending again")
			return found, nil
		}
		if b.refused[batch.TxnKey] {
			return b.send(ctx, batch)
		}
		now := b.deps.Clock.Now()
		first, looked := b.unsettled[batch.TxnKey]
		if !looked {
			if b.unsettled == nil {
				b.unsettled = map[string]time.Time{}
			}
			b.unsettled[batch.TxnKey], first = now, now
		}
		if now.Sub(first) < outcomeSettle {
			return "", &unsettledError{lookAgain: first.Add(outcomeSettle)}
		}
	}
	if err := b.deps.Outbox.MarkAttempt(ctx, batch.Keys(), b.deps.Clock.Now()); err != nil {
		return "", err
	}
	return b.send(ctx, batch)
}

// answered tells whether the homeserver answered a failed send with an
// error: then it made no event. A request cut off has no answer.
func answered(err error) bool {
	var respErr mautrix.RespError
	if errors.As(err, &respErr) {
		return true
	}
	var httpErr mautrix.HTTPError
	return errors.As(err, &httpErr) && httpErr.Response != nil
}

// refused tells whether the homeserver refused a send for a reason that
// retrying soon is unlikely to change: an answer in the 4xx range (a
// person who does not exist, a room Jarvis is not in or may not post to,
// a room that does not exist), except rate limiting and the
// authentication errors that are Jarvis's own, not the notice's.
func refused(err error) bool {
	var respErr mautrix.RespError
	if !errors.As(err, &respErr) {
		return false
	}
	switch {
	case respErr.ErrCode == mautrix.MLimitExceeded.ErrCode, respErr.ErrCode == mautrix.MUnknownToken.ErrCode,
		respErr.ErrCode == mautrix.MMissingToken.ErrCode:
		return false
	case respErr.StatusCode == 401, respErr.StatusCode == 408, respErr.StatusCode == 429:
		return false
	}
	return respErr.StatusCode >= 400 && respErr.StatusCode < 500
}

// findSent looks through Jarvis's recent events in the room for one that
// carries the transaction key. In an encrypted room the key is inside the
// encrypted content: Jarvis decrypts its own events with the megolm
// sessions it created. An event it cannot decrypt (its keys lost with the
// database) counts as not found, and the notice is sent again: a rare
// duplicate is better than a lost notice.
func (b *Bot) findSent(ctx context.Context, roomID id.RoomID, txnKey string) (id.EventID, error) {
	filter := &mautrix.FilterPart{Senders: []id.UserID{b.Client.UserID}}
	resp, err := b.matrix.Messages(ctx, roomID, "", "", mautrix.DirectionBackward, filter, 100)
	if err != nil {
		return "", err
	}
	for _, evt := range resp.Chunk {
		if evt = b.decrypted(ctx, evt); evt == nil {
			continue
		}
		if key, _ := evt.Content.Raw[noticeField].(string); key == txnKey {
			return evt.ID, nil
		}
	}
	return "", nil
}

func (b *Bot) roomOf(ctx context.Context, head core.OutboxEntry) (id.RoomID, error) {
	if head.RoomID != "" {
		return id.RoomID(head.RoomID), nil
	}
	return b.directRoom(ctx, head.ToUser)
}

// txnID derives the Matrix transaction ID from the notice key, so a retry
// of the same notice is deduplicated by the homeserver.
func txnID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "jarvis-" + hex.EncodeToString(sum[:16])
}

func (b *Bot) send(ctx context.Context, batch core.Batch) (id.EventID, error) {
	head := batch.Entries[0]
	roomID, err := b.roomOf(ctx, head)
	if err != nil {
		return "", err
	}
	target, err := b.targetEvent(ctx, head)
	if errors.Is(err, core.ErrNotFound) {
		// The notice it relates to is no longer kept (retention.outbox):
		// say it without the relation rather than retry for ever and hold
		// the room's queue behind it.
		b.log.Warn().Err(err).Str("notice", head.Key).Msg("The notice this one relates to is no longer kept; sending it on its own")
		err = nil
	}
	if err != nil {
		return "", err
	}
	kind := detached(head.Kind, target, head.Target)
	if kind == "" {
		// A reaction to a message no longer kept has nothing to go on.
		return "", nil
	}
	if b.Client.Crypto != nil {
		// Whether the room is encrypted and who is in it come from the
		// state store, which learns them from sync; a room the sender
		// reaches before sync has told about it (joined at start, or known
		// only from before a lost state) is read once here, so nothing
		// goes out in the clear or to too few devices.
		if _, err := b.roomInfo(ctx, roomID); err != nil {
			return "", fmt.Errorf("read the room's state: %w", err)
		}
	}
	req := mautrix.ReqSendEvent{TransactionID: txnID(batch.TxnKey)}
	marked := func(parsed any) *event.Content {
		return &event.Content{Parsed: parsed, Raw: map[string]any{noticeField: batch.TxnKey}}
	}
	var resp *mautrix.RespSendEvent
	switch kind {
	case core.NoticeReaction:
		content := &event.ReactionEventContent{RelatesTo: event.RelatesTo{Type: event.RelAnnotation, EventID: target, Key: head.Body}}
		resp, err = b.matrix.SendMessageEvent(ctx, roomID, event.EventReaction, marked(content), req)
	case core.NoticeEdit:
		content := render(head.Body, head.Mentions)
		content.SetEdit(target)
		resp, err = b.matrix.SendMessageEvent(ctx, roomID, event.EventMessage, marked(content), req)
	case core.NoticeMessage:
		content := render(batch.Body(), batch.Mentions())
		content.RelatesTo = relation(target, head.Thread, id.EventID(head.ThreadRoot))
		resp, err = b.matrix.SendMessageEvent(ctx, roomID, event.EventMessage, marked(content), req)
	case core.NoticeImage:
		content, drawErr := b.image(ctx, roomID, head.Body)
		if drawErr != nil {
			return "", drawErr
		}
		content.RelatesTo = relation(target, head.Thread, id.EventID(head.ThreadRoot))
		resp, err = b.matrix.SendMessageEvent(ctx, roomID, event.EventMessage, marked(content), req)
	default:
		return "", fmt.Errorf("unknown notice kind %q", head.Kind)
	}
	if err != nil {
		return "", err
	}
	return resp.EventID, nil
}

// relation puts a message in target's thread (in_reply_to falling back
// to target for clients without threads), or makes it a reply to target,
// within the thread rooted at root when there is one (is_falling_back
// false: it is a real reply); none without a target.
func relation(target id.EventID, thread bool, root id.EventID) *event.RelatesTo {
	switch {
	case target == "":
		return nil
	case thread:
		return (&event.RelatesTo{}).SetThread(target, target)
	case root != "":
		return &event.RelatesTo{Type: event.RelThread, EventID: root, InReplyTo: &event.InReplyTo{EventID: target}}
	}
	return &event.RelatesTo{InReplyTo: &event.InReplyTo{EventID: target}}
}

// Image is a picture to send: a PNG, its size, and what it shows in words.
type Image struct {
	PNG           []byte
	Width, Height int
	Description   string
}

// image draws an image notice and uploads it through the homeserver's
// media repository, encrypted (m.image with file) in an encrypted room.
// Drawn again on a retry, it comes out the same, and the retry's
// transaction id keeps the message from going twice; an upload whose
// message was never sent stays unused in the media repository. A room
// whose bridge drops images gets the image's words as a message instead.
func (b *Bot) image(ctx context.Context, roomID id.RoomID, body string) (*event.MessageEventContent, error) {
	if b.deps.Images == nil {
		return nil, errors.New("no image renderer")
	}
	img, err := b.deps.Images(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("draw image: %w", err)
	}
	room, err := b.roomInfo(ctx, roomID)
	if err != nil {
		return nil, fmt.Errorf("read the room's state: %w", err)
	}
	if room.NoImages {
		return render(core.EscapeMarkdown(img.Description), nil), nil
	}
	content := &event.MessageEventContent{MsgType: event.MsgImage, Body: img.Description, FileName: "chart.png",
		Info: &event.FileInfo{MimeType: "image/png", Size: len(img.PNG), Width: img.Width, Height: img.Height}}
	encrypted := false
	if b.Client.Crypto != nil {
		if encrypted, err = b.Client.StateStore.IsEncrypted(ctx, roomID); err != nil {
			return nil, fmt.Errorf("is the room encrypted: %w", err)
		}
	}
	data, mime := img.PNG, "image/png"
	var file *attachment.EncryptedFile
	if encrypted {
		file = attachment.NewEncryptedFile()
		data, mime = slices.Clone(img.PNG), "application/octet-stream"
		file.EncryptInPlace(data)
	}
	up, err := b.matrix.UploadBytes(ctx, data, mime)
	if err != nil {
		return nil, fmt.Errorf("upload image: %w", err)
	}
	if file != nil {
		content.File = &event.EncryptedFileInfo{EncryptedFile: *file, URL: up.ContentURI.CUString()}
	} else {
		content.URL = up.ContentURI.CUString()
	}
	return content, nil
}

// detached is the kind a notice is sent as: its own, unless it relates to
// a notice (targetKey) whose event is gone (target empty). Then an edit
// goes as a message of its own, a thread reply or reply as a plain
// message, and a reaction not at all ("").
func detached(kind core.NoticeKind, target id.EventID, targetKey string) core.NoticeKind {
	if target != "" || targetKey == "" {
		return kind
	}
	switch kind {
	case core.NoticeEdit:
		return core.NoticeMessage
	case core.NoticeReaction:
		return ""
	}
	return kind
}

// targetEvent resolves the event a notice relates to: a Matrix event ID
// given directly, or the event that delivered an earlier notice.
func (b *Bot) targetEvent(ctx context.Context, n core.OutboxEntry) (id.EventID, error) {
	if n.TargetEvent != "" {
		return id.EventID(n.TargetEvent), nil
	}
	if n.Target == "" {
		return "", nil
	}
	target, err := b.deps.Outbox.Get(ctx, n.Target)
	if err != nil {
		return "", fmt.Errorf("notice %q targets %q: %w", n.Key, n.Target, err)
	}
	if !target.FailedAt.IsZero() {
		return "", fmt.Errorf("notice %q targets %q, which was given up on: %w", n.Key, n.Target, core.ErrNotFound)
	}
	if target.EventID == "" {
		return "", errTargetPending
	}
	return id.EventID(target.EventID), nil
}
