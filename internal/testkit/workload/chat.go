package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// chatter is one person talking to Jarvis: three !ping for every sentence
// that Jarvis answers with a tripwire proposal, which the person then
// dismisses with ❌ (so the workload arms nothing that grows).
type chatter struct {
	w *Workload
	p *tesths.Person
	n int
}

func (c *chatter) step(ctx context.Context, rng *rand.Rand) {
	c.n++
	if c.n%4 != 0 || len(c.w.cfg.Agents) == 0 {
		c.w.exchange(ctx, c.p, "!ping")
		return
	}
	agent := c.w.cfg.Agents[rng.IntN(len(c.w.cfg.Agents))]
	proposal := c.w.exchange(ctx, c.p, fmt.Sprintf("let me know if %s goes offline", agent))
	if proposal.Answer == "" {
		return
	}
	c.w.tap(ctx, c.p, proposal.Answer, "❌")
}

// exchange has p say text in the room and waits for Jarvis's reply to it;
// the exchange is recorded, answered or not.
func (w *Workload) exchange(ctx context.Context, p *tesths.Person, text string) Exchange {
	ex := Exchange{Person: p.UserID, Text: text}
	start := time.Now()
	sent, err := p.Say(ctx, w.cfg.Room, text)
	if err != nil {
		if ctx.Err() == nil {
			w.record(func(r *Record) { r.Failed["say "+text]++ })
		}
		return ex
	}
	ex.Sent = sent
	answer, err := p.WaitFor(ctx, w.cfg.Timeout, func(evt *event.Event) bool {
		return tesths.MessageFrom(w.cfg.Room, w.cfg.Jarvis)(evt) && tesths.ReplyTo(evt) == sent
	})
	if err == nil {
		ex.Answer, ex.Latency = answer.ID, time.Since(start)
	}
	if ctx.Err() == nil {
		w.record(func(r *Record) { r.Chat = append(r.Chat, ex) })
	}
	return ex
}

// tap reacts with key to Jarvis's message target and waits for Jarvis to
// edit it; the tap is recorded as an exchange whose answer is the edit.
func (w *Workload) tap(ctx context.Context, p *tesths.Person, target id.EventID, key string) Exchange {
	ex := Exchange{Person: p.UserID, Text: key}
	start := time.Now()
	resp, err := p.SendReaction(ctx, w.cfg.Room, target, key)
	if err != nil {
		if ctx.Err() == nil {
			w.record(func(r *Record) { r.Failed["tap "+key]++ })
		}
		return ex
	}
	ex.Sent = resp.EventID
	edit, err := p.WaitFor(ctx, w.cfg.Timeout, func(evt *event.Event) bool {
		return tesths.MessageFrom(w.cfg.Room, w.cfg.Jarvis)(evt) && editOf(evt) == target
	})
	if err == nil {
		ex.Answer, ex.Latency = edit.ID, time.Since(start)
	}
	if ctx.Err() == nil {
		w.record(func(r *Record) { r.Chat = append(r.Chat, ex) })
	}
	return ex
}

// editOf is the event a message edits, from its m.relates_to (which an
// encrypted edit carries in the clear); empty if it edits none.
func editOf(evt *event.Event) id.EventID {
	rel, _ := evt.Content.Raw["m.relates_to"].(map[string]any)
	if rel["rel_type"] != "m.replace" {
		return ""
	}
	target, _ := rel["event_id"].(string)
	return id.EventID(target)
}
