package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/converse"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
)

// toolCall is a call a scripted model makes.
type toolCall struct{ name, args string }

// scriptedModel calls the tools it is scripted to, in order, and answers
// with its text; it keeps what it was asked and what the tools gave.
type scriptedModel struct {
	calls   []toolCall
	text    string
	err     error
	asked   []converse.Request
	results []converse.Result
}

func (m *scriptedModel) Converse(ctx context.Context, req converse.Request) (converse.Reply, error) {
	m.asked = append(m.asked, req)
	if m.err != nil {
		return converse.Reply{}, m.err
	}
	for _, c := range m.calls {
		var tool *converse.Tool
		for i := range req.Tools {
			if req.Tools[i].Name == c.name {
				tool = &req.Tools[i]
			}
		}
		if tool == nil {
			return converse.Reply{}, fmt.Errorf("no tool %s", c.name)
		}
		res, err := tool.Call(ctx, json.RawMessage(c.args))
		if err != nil {
			return converse.Reply{}, err
		}
		m.results = append(m.results, res)
	}
	if req.Progress != nil && m.text != "" {
		req.Progress(m.text[:len(m.text)/2])
		req.Progress(m.text)
	}
	return converse.Reply{Text: m.text}, nil
}

// modelHarness is the tripwire harness with a scripted model behind it.
func modelHarness(t *testing.T, m *scriptedModel) *twHarness {
	t.Helper()
	th := newTripwireHarness(t, 0)
	th.proc.AddFeatures(Features{Model: m})
	return th
}

// addressed is a message from alice addressed to Jarvis.
func (th *twHarness) addressed(t *testing.T, eventID, body string) []string {
	t.Helper()
	return th.handle(t, Message{RoomID: "!room:x", EventID: eventID, Sender: alice, Network: "matrix", Body: body, Addressed: true, Sent: th.clock.Now()})
}

func TestModelWorryBecomesAProposalOnlyATapArms(t *testing.T) {
	m := &scriptedModel{calls: []toolCall{
		{"my_tripwires", `{}`},
		{"propose_tripwire", `{"source":"agent status","param":"EVE","op":"neq","value":"online","label":"EVE not online","push":true}`},
	}, text: "I can watch EVE for you this week: tap ✅ on the proposal."}
	th := modelHarness(t, m)
	worry := "I'm nervous about the backups this week"
	if !th.proc.wantsModel(Message{Body: worry, Addressed: true, Trust: core.TrustNative}) {
		t.Fatal("the grammar claims the worry")
	}
	th.say(t, alice, "the backups run on EVE now")
	got := th.addressed(t, "$worry", worry)
	// The streamed reply's message, then the proposal.
	if len(got) != 2 || !strings.HasPrefix(got[0], "I can watch EVE") || !strings.Contains(got[1], "Shall I watch this for you?") ||
		!strings.Contains(got[1], "agent.status[EVE] ≠ online") {
		t.Fatalf("replies = %q", got)
	}
	if len(th.tripwires(t, alice)) != 0 {
		t.Fatal("the model's proposal armed something")
	}
	req := m.asked[0]
	if req.Message.Text != worry || req.Message.Trust != core.TrustNative || len(req.Conversation) != 1 ||
		req.Conversation[0].Text != "the backups run on EVE now" || req.Conversation[0].Trust != core.TrustNative {
		t.Errorf("the model was asked %+v", req)
	}
	p, err := th.store.GetPending(context.Background(), "confirm:tripwire:$worry")
	if err != nil {
		t.Fatal(err)
	}
	var d tripwire.Draft
	json.Unmarshal([]byte(p.Payload), &d)
	if !strings.Contains(d.Rationale, "“the backups run on EVE now”\n“"+worry+"”") || d.SourceTrust != core.TrustNative {
		t.Errorf("rationale %q, trust %s", d.Rationale, d.SourceTrust)
	}
	if bob := th.answer(t, "confirm:tripwire:$worry", bob, YesReaction); len(bob) != 0 || len(th.tripwires(t, alice)) != 0 {
		t.Errorf("someone else's tap armed it: %+v", bob)
	}
	th.answer(t, "confirm:tripwire:$worry", alice, YesReaction)
	if defs := th.tripwires(t, alice); len(defs) != 1 || defs[0].Label != "EVE not online" || !defs[0].Action.Push {
		t.Errorf("after alice's ✅: %+v", defs)
	}
}

// TestModelProposalIsTheGrammars: the same request made through the
// model's tool and through the grammar is the same proposal: the same
// draft (rule, action, cooldown, rationale and its trust), the same ✅.
func TestModelProposalIsTheGrammars(t *testing.T) {
	const sentence = "tell me when GI drops below 0.70"
	grammar := newTripwireHarness(t, 0)
	grammar.addressed(t, "$s", sentence)
	want, err := grammar.store.GetPending(context.Background(), "confirm:tripwire:$s")
	if err != nil {
		t.Fatal(err)
	}
	var wantDraft tripwire.Draft
	json.Unmarshal([]byte(want.Payload), &wantDraft)

	args, _ := json.Marshal(map[string]any{"source": "GI", "op": "lt", "value": 0.70, "label": wantDraft.Label, "push": true})
	m := &scriptedModel{calls: []toolCall{{"propose_tripwire", string(args)}}}
	viaModel := modelHarness(t, m)
	// The grammar understands the sentence, so the model would not be
	// asked: take the grammar away from this processor.
	viaModel.proc.intents, viaModel.proc.askIntents = nil, nil
	viaModel.addressed(t, "$s", sentence)
	got, err := viaModel.store.GetPending(context.Background(), "confirm:tripwire:$s")
	if err != nil {
		t.Fatalf("no proposal through the model: %v (tool said %+v)", err, m.results)
	}
	if got.Payload != want.Payload || got.Kind != want.Kind || got.Requester != want.Requester {
		t.Errorf("through the model:\n%s\nthrough the grammar:\n%s", got.Payload, want.Payload)
	}
	for _, h := range []*twHarness{grammar, viaModel} {
		h.answer(t, "confirm:tripwire:$s", alice, YesReaction)
		if defs := h.tripwires(t, alice); len(defs) != 1 || defs[0].Rationale != wantDraft.Rationale {
			t.Errorf("armed: %+v", defs)
		}
	}
}

func TestModelInvalidToolArgsGetTheGrammarsMessage(t *testing.T) {
	m := &scriptedModel{calls: []toolCall{
		{"propose_tripwire", `{"source":"warp.drive","op":"lt","value":"1"}`},
		{"propose_tripwire", `{"source":"GI","op":"lt"}`},
		{"propose_tripwire", `{"source":"GI","op":"lt","value":"0.5","cooldown":"forever"}`},
	}, text: "I could not propose that."}
	th := modelHarness(t, m)
	th.addressed(t, "$w", "I'm nervous about the warp drive")
	grammar := []string{
		th.say(t, alice, `!tw arm warp.drive lt 1 --because "x"`)[0],
		th.say(t, alice, `!tw arm GI lt --because "x"`)[0],
		th.say(t, alice, `!tw arm GI lt 0.5 --cooldown forever --because "x"`)[0],
	}
	if len(m.results) != len(grammar) {
		t.Fatalf("results = %+v", m.results)
	}
	for i, res := range m.results {
		why := res.Data.(map[string]string)["refused"]
		if why == "" || !strings.Contains(grammar[i], why) {
			t.Errorf("call %d: the tool said %q, the grammar %q", i, why, grammar[i])
		}
	}
	if _, err := th.store.GetPending(context.Background(), "confirm:tripwire:$w"); err == nil {
		t.Error("a refused call proposed something")
	}
}

func TestModelProposalAfterUntrustedTextIsMarked(t *testing.T) {
	m := &scriptedModel{calls: []toolCall{{"propose_tripwire", `{"source":"vault","op":"lt","value":"5"}`}}}
	th := modelHarness(t, m)
	th.handle(t, Message{RoomID: "!room:x", EventID: "$b", Sender: alice, Puppet: "@telegram_1:x", Network: "telegram",
		Trust: core.TrustLinked, Body: "the vault looks low", Sent: th.clock.Now()})
	got := th.addressed(t, "$q", "what should I do about it?")
	if len(got) != 1 || !strings.Contains(got[0], "⚠️ Proposed after reading text I don't trust (messages written through a bridge)") {
		t.Fatalf("replies = %q", got)
	}
	if m.asked[0].Conversation[0].Trust != core.TrustLinked {
		t.Errorf("the excerpt went as %+v", m.asked[0].Conversation)
	}
	p, _ := th.store.GetPending(context.Background(), "confirm:tripwire:$q")
	var d tripwire.Draft
	json.Unmarshal([]byte(p.Payload), &d)
	if d.SourceTrust != core.TrustExternal {
		t.Errorf("source trust %s", d.SourceTrust)
	}
}

func TestModelFallsBackToTheGrammar(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w (model.timeout, 5s)", converse.ErrSlow), "it did not answer within model.timeout"},
		{fmt.Errorf("%w: dial tcp 10.1.2.3:11434: connection refused", converse.ErrDown), "it could not be reached"},
		{fmt.Errorf("%w (model.budget.person_tokens: 10 tokens a day)", converse.ErrOverBudget), "today's model budget is spent (model.budget.person_tokens)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			th := modelHarness(t, &scriptedModel{err: tc.err})
			got := th.addressed(t, "$x", "what's the meaning of all this?")
			if len(got) != 2 || !strings.HasPrefix(got[0], "I didn't understand that.") || !strings.Contains(got[1], tc.want) ||
				!strings.Contains(got[1], "without my language model") || strings.Contains(got[1], "10.1.2.3") {
				t.Errorf("replies = %q", got)
			}
		})
	}
}

func TestModelReplyStreamsAsAnEditedMessage(t *testing.T) {
	m := &scriptedModel{text: "All agents reported within their cadence today."}
	th := modelHarness(t, m)
	th.addressed(t, "$s", "how is everyone doing today, in your words?")
	waiting, err := th.store.Outbox().Waiting(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, n := range waiting {
		kinds = append(kinds, string(n.Kind)+" "+n.Body)
	}
	if len(waiting) != 2 || waiting[0].Key != "model:$s" || !strings.HasSuffix(waiting[0].Body, " …") ||
		waiting[1].Kind != core.NoticeEdit || waiting[1].Target != "model:$s" || waiting[1].Body != m.text {
		t.Errorf("notices = %q", kinds)
	}
}

// TestModelDraftsACardSetAfterItsQuestions: the model asks its questions
// first and sees them in the next turn; then it drafts the set, which is
// shown once for ✅ and published through `!card publish`'s own path.
func TestModelDraftsACardSetAfterItsQuestions(t *testing.T) {
	h, cards := newCardHarness(t, testconfig.Cards())
	m := &scriptedModel{text: "Before I draft anything: what must the export contain, and how urgent is it?"}
	h.proc.AddFeatures(Features{Model: m})
	say := func(id, body string) []string {
		return h.handle(t, Message{RoomID: "!room:x", EventID: id, Sender: alice, Network: "matrix", Body: body, Addressed: true, Sent: h.clock.Now()})
	}
	say("$1", "we keep losing the weekly numbers, can we fix the export?")
	if drafts, _ := cards.Drafts(context.Background(), alice); len(drafts) != 0 {
		t.Fatalf("drafted before asking: %+v", drafts)
	}
	h.clock.Advance(time.Minute)
	m.text = "Here is the set; tap ✅ to publish it."
	m.calls = []toolCall{{"propose_card_set", `{"cards":[` +
		`{"goal":"Export the weekly numbers as CSV","acceptance":["the CSV opens in a spreadsheet"],"priority":"P1"},` +
		`{"goal":"Mail the export every Monday","acceptance":["it arrives by 9:00"],"priority":"P2"}]}`}}
	got := say("$2", "every Monday, as CSV; fairly urgent")
	conv := m.asked[1].Conversation
	if len(conv) != 2 || conv[1].From != "jarvis (your earlier answer)" || !strings.Contains(conv[1].Text, "what must the export contain") {
		t.Errorf("the second turn saw %+v", conv)
	}
	var question string
	for _, r := range got {
		if strings.HasPrefix(r, "Publish these 2 cards") {
			question = r
		}
	}
	if question == "" || !strings.Contains(question, "Export the weekly numbers as CSV") {
		t.Fatalf("replies = %q", got)
	}
	if list, _ := cards.List(context.Background(), card.Filter{}); len(list) != 0 {
		t.Fatalf("published before the tap: %+v", list)
	}
	h.answer(t, "confirm:cardset:$2", alice, YesReaction)
	if list, _ := cards.List(context.Background(), card.Filter{}); len(list) != 2 {
		t.Errorf("after ✅: %+v", list)
	}
}

// TestModelProposesAReminder: a reminder from the model's words is read
// as `!remind` reads a sentence (a missing time gets its question), and
// set only by the person's ✅.
func TestModelProposesAReminder(t *testing.T) {
	rh := newRemindHarness(t)
	m := &scriptedModel{calls: []toolCall{
		{"propose_reminder", `{"what":"check the backups","when":""}`},
		{"propose_reminder", `{"what":"check the backups","when":"tomorrow at 10"}`},
	}}
	rh.proc.AddFeatures(Features{Model: m})
	got := rh.handle(t, Message{RoomID: "!room:x", EventID: "$r", Sender: alice, Network: "matrix", Body: "jarvis, I keep forgetting the backups",
		Addressed: true, Sent: rh.clock.Now()})
	if why := m.results[0].Data.(map[string]string)["refused"]; !strings.HasPrefix(why, "When should I remind you?") {
		t.Errorf("no time: %q", why)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "Shall I remind you tomorrow at 10:00") || !strings.Contains(got[0], "check the backups") {
		t.Fatalf("replies = %q", got)
	}
	if list, _ := rh.svc.List(context.Background(), alice); len(list) != 0 {
		t.Fatalf("set before the tap: %+v", list)
	}
	rh.answer(t, "confirm:reminder:$r", alice, YesReaction)
	if list, _ := rh.svc.List(context.Background(), alice); len(list) != 1 || list[0].Text != "check the backups" {
		t.Errorf("after ✅: %+v", list)
	}
}

// TestModelReadsTasksOnlyInPrivate: the person's tasks are private, so the
// model gets the tool that reads them only in their direct room.
func TestModelReadsTasksOnlyInPrivate(t *testing.T) {
	rh := newNotebookHarness(t)
	m := &scriptedModel{text: "ok"}
	rh.proc.AddFeatures(Features{Model: m})
	rh.sayDirect(t, alice, "add a task: renew the certificate")
	offered := func(req converse.Request) bool {
		for _, tool := range req.Tools {
			if tool.Name == "my_tasks" {
				return true
			}
		}
		return false
	}
	rh.handle(t, Message{RoomID: "!room:x", EventID: "$shared", Sender: alice, Network: "matrix", Body: "jarvis, what's on my plate, in your words?",
		Addressed: true, Sent: rh.clock.Now()})
	rh.sayDirect(t, alice, "what's on my plate, in your words?")
	if len(m.asked) != 2 || offered(m.asked[0]) || !offered(m.asked[1]) {
		t.Fatalf("my_tasks offered in the shared room %v, in the direct room %v", len(m.asked) > 0 && offered(m.asked[0]), len(m.asked) > 1 && offered(m.asked[1]))
	}
	m.calls = []toolCall{{"my_tasks", `{}`}}
	rh.sayDirect(t, alice, "what's on my plate, in your words, again?")
	if rows, _ := json.Marshal(m.results[0].Data); !strings.Contains(string(rows), "renew the certificate") {
		t.Errorf("my_tasks gave %s", rows)
	}
}

// TestModelProposesACommand: a command the model proposes is checked
// when proposed as the table checks it typed: one it may not propose, one
// its asker may not run (an admin's silence from someone else) and one
// whose arguments its parser refuses are refused to the model in the
// grammar's own words, and no proposal is shown; a silence an admin may
// set runs only on the ✅ of the admin who asked, as them.
func TestModelProposesACommand(t *testing.T) {
	m := &scriptedModel{calls: []toolCall{
		{"propose_command", `{"command":"!tw delete tw_1"}`},
		{"propose_command", `{"command":"!silence EVE for 2h --because \"maintenance\""}`},
	}}
	th := modelHarness(t, m)
	ctx := context.Background()
	ask := func(id, sender string) []string {
		return th.handle(t, Message{RoomID: "!room:x", EventID: id, Sender: sender, Network: "matrix", Body: "EVE goes down for maintenance, keep it quiet",
			Addressed: true, Sent: th.clock.Now()})
	}
	refusedWith := func(i int) string {
		t.Helper()
		data, _ := m.results[i].Data.(map[string]string)
		return data["refused"]
	}
	got := ask("$alice", alice)
	if why := refusedWith(0); !strings.Contains(why, "I propose only silence and task add") {
		t.Errorf("a delete: %q", why)
	}
	// Silencing an agent is for admins: refused when proposed, in the
	// words the command answers alice with when she types it.
	typed := th.say(t, alice, "!silence EVE for 2h --because \"maintenance\"")
	if len(typed) != 1 || refusedWith(1) != typed[0] || !strings.Contains(typed[0], "Only an admin silences an agent") {
		t.Errorf("a non-admin's silence: refused %q, typed %q", refusedWith(1), typed)
	}
	for _, r := range got {
		if strings.Contains(r, "Shall I run this") {
			t.Fatalf("a proposal alice cannot arm was shown: %q", got)
		}
	}
	if _, err := th.store.GetPending(ctx, "confirm:command:$alice"); err == nil {
		t.Fatal("a proposal alice cannot arm waits for her ✅")
	}

	// Arguments the command's parser refuses: its own message, no
	// proposal.
	m.results, m.calls = nil, []toolCall{{"propose_command", `{"command":"!silence EVE for blorp"}`}}
	got = ask("$badargs", "@admin:x")
	typed = th.say(t, "@admin:x", "!silence EVE for blorp")
	if len(typed) != 1 || refusedWith(0) != typed[0] || !strings.Contains(typed[0], "as a time. Say what and for how long") {
		t.Errorf("bad arguments: refused %q, typed %q", refusedWith(0), typed)
	}
	if len(got) != 1 || strings.Contains(got[0], "Shall I run this") {
		t.Errorf("bad arguments: replies %q", got)
	}
	if list, _ := th.oncall.Silences(ctx); len(list) != 0 {
		t.Fatalf("the checks silenced: %+v", list)
	}

	m.results, m.calls = nil, []toolCall{{"propose_command", `{"command":"!silence EVE for 2h --because \"maintenance\""}`}}
	got = ask("$admin", "@admin:x")
	if len(got) != 1 || !strings.Contains(got[0], "Shall I run this for you? `!silence EVE for 2h --because \"maintenance\"`") {
		t.Fatalf("replies = %q (tools said %+v)", got, m.results)
	}
	if list, _ := th.oncall.Silences(ctx); len(list) != 0 {
		t.Fatalf("silenced before the tap: %+v", list)
	}
	th.answer(t, "confirm:command:$admin", alice, YesReaction)
	if list, _ := th.oncall.Silences(ctx); len(list) != 0 {
		t.Fatalf("someone else's tap silenced: %+v", list)
	}
	th.answer(t, "confirm:command:$admin", "@admin:x", YesReaction)
	if list, _ := th.oncall.Silences(ctx); len(list) != 1 {
		t.Errorf("after the admin's ✅: %+v", list)
	}
}

// TestModelProposalToolsCheckTheTable: every proposal tool asks the
// table, when the model calls it, whether the asker may run the command
// that makes the same proposal typed; one they may not is refused to the
// model in the table's words, and nothing is shown for ✅.
func TestModelProposalToolsCheckTheTable(t *testing.T) {
	m := &scriptedModel{calls: []toolCall{
		{"propose_tripwire", `{"source":"agent status","param":"EVE","op":"neq","value":"online"}`},
	}}
	th := modelHarness(t, m)
	// A workspace whose table keeps tripwire proposals to admins.
	h, path, _ := th.proc.resolve([]string{"tw", "propose"})
	if path != "tw propose" {
		t.Fatalf("resolved %q", path)
	}
	h.Admin = true
	got := th.addressed(t, "$worry", "I'm nervous about the backups this week")
	data, _ := m.results[0].Data.(map[string]string)
	if data["refused"] != "`!tw propose` is for admins only." {
		t.Errorf("the tool said %+v", m.results[0].Data)
	}
	for _, r := range got {
		if strings.Contains(r, "Shall I watch") {
			t.Errorf("a proposal alice may not make was shown: %q", got)
		}
	}
	m.results = nil
	if got := th.handle(t, Message{RoomID: "!room:x", EventID: "$admin", Sender: "@admin:x", Network: "matrix",
		Body: "I'm nervous about the backups this week", Addressed: true, Sent: th.clock.Now()}); len(got) == 0 || !strings.Contains(got[len(got)-1], "Shall I watch") {
		t.Errorf("the admin's proposal: %q (tools said %+v)", got, m.results)
	}
}

// TestModelProposedTaskIsCheckedWhenProposed: `!task add` proposed with
// a text the notebook refuses is refused to the model in the grammar's
// words, and no proposal is shown.
func TestModelProposedTaskIsCheckedWhenProposed(t *testing.T) {
	long := strings.Repeat("x", notebook.MaxText+1)
	m := &scriptedModel{calls: []toolCall{{"propose_command", `{"command":"!task add ` + long + `"}`}}}
	th := modelHarness(t, m)
	th.proc.AddFeatures(Features{Notebook: notebook.NewService(th.store.Notebook(), th.clock)})
	got := th.addressed(t, "$task", "I am nervous about the backups this week")
	data, _ := m.results[0].Data.(map[string]string)
	typed := th.say(t, alice, "!task add "+long)
	if len(typed) != 1 || data["refused"] != typed[0] || !strings.Contains(typed[0], "Not kept:") {
		t.Errorf("the tool said %+v, the grammar %q", m.results[0].Data, typed)
	}
	for _, r := range got {
		if strings.Contains(r, "Shall I run this") {
			t.Errorf("a task the notebook refuses was proposed: %q", got)
		}
	}
}
