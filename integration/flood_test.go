package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// floodAPIRate lets one token make as many requests as the flood tests send
// (api.rate_limit.credential), so that what bounds them is the limit each
// test is about, not the token's rate, which has tests of its own.
const floodAPIRate = "  rate_limit:\n    credential: {per_second: 100000, burst: 10000}\n"

// answer is an API's status and JSON body, or the error of a request that
// got none.
type answer struct {
	code int
	body map[string]any
	err  error
}

// burst sends n requests, 8 at a time, body(i) bearing token, and returns
// the answers in order. It neither stops nor fails the test itself, so
// that it may run beside other goroutines.
func burst(base, token, method, path string, n int, headers func(i int) map[string]string, body func(i int) any) []answer {
	out := make([]answer, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				data, err := json.Marshal(body(i))
				if err != nil {
					out[i].err = err
					continue
				}
				req, err := http.NewRequest(method, base+path, bytes.NewReader(data))
				if err != nil {
					out[i].err = err
					continue
				}
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				if headers != nil {
					for k, v := range headers(i) {
						req.Header.Set(k, v)
					}
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					out[i].err = err
					continue
				}
				out[i].code = resp.StatusCode
				out[i].err = json.NewDecoder(resp.Body).Decode(&out[i].body)
				resp.Body.Close()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// tally counts answers by status and the limit they name: "201", "413
// fleet.journal.max_cycle_bytes", …; a request without an answer counts
// under its error.
func tally(answers []answer) map[string]int {
	out := map[string]int{}
	for _, a := range answers {
		switch {
		case a.err != nil:
			out["error: "+a.err.Error()]++
		case a.body["limit_key"] != nil:
			out[fmt.Sprintf("%d %v", a.code, a.body["limit_key"])]++
		default:
			out[fmt.Sprint(a.code)]++
		}
	}
	return out
}

// dbBytes is the size of a SQLite database with its write-ahead log.
func dbBytes(path string) int64 {
	var size int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			size += fi.Size()
		}
	}
	return size
}

// journalBody is a journal entry of agent's with content of n bytes.
func journalBody(agent, cycle, id string, n int) map[string]any {
	content := strings.Repeat("x", n)
	return map[string]any{"agent": agent, "cycle": cycle, "entry_id": id, "title": "entry " + id, "content": content,
		"content_signature": fleet.ContentSignature(content), "signal_weight": 0.5,
		"timestamp": time.Now().UTC().Format(time.RFC3339)}
}

// TestJournalFlood: one agent's token sends 200 small journal entries to
// one cycle, then 1,000 entries of 55 KB, then 1,000 of 15 KB over five
// cycles, as fast as Jarvis answers. The cycle takes
// fleet.journal.max_cycle_entries small ones, the rest refused 429 naming
// the key; every 55 KB entry is refused 413 naming max_entry_bytes; of
// the 15 KB ones each cycle takes what max_cycle_bytes allows, and the
// agent what max_agent_bytes allows, the rest refused 413 naming the key.
// Nothing refused is stored, another agent's journal and the agent's
// earlier entry are as they were, and the database grows by about what the
// limits allow. A read of a big cycle comes in pages of at most the limit
// asked (fleet.journal.page_size when none is) that together hold each
// entry once; a page larger than max_page_size is refused.
func TestJournalFlood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	port := freeLoopbackPort(t)
	const maxCycleBytes, maxAgentBytes = 2 << 20, 7 << 20
	j := newJarvis(t, options{extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\n%s", port, floodAPIRate) +
		"fleet:\n  agents:\n    - name: EVE\n    - name: ZEUS\n" +
		fmt.Sprintf("  journal:\n    max_cycle_entries: 150\n    max_cycle_bytes: %d\n    max_agent_bytes: %d\n", maxCycleBytes, maxAgentBytes)})
	// Tokens are issued once Jarvis is up, its database built.
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	api.waitUp(t, j)
	api.tokens = j.issueTokens(t, "EVE", "ZEUS")
	eve, zeus := api.tokens.agent["EVE"], api.tokens.agent["ZEUS"]

	// read is a cycle's journal as a reader sees it: each entry's id and
	// title.
	read := func(agent, cycle string) string {
		t.Helper()
		code, body := api.callWith(t, zeus, http.MethodGet, "/api/agents/journal?agent="+agent+"&cycle="+cycle, nil)
		if code != http.StatusOK {
			t.Fatalf("read %s's %s: %d %v", agent, cycle, code, body)
		}
		var ids []string
		for _, e := range body["entries"].([]any) {
			e := e.(map[string]any)
			ids = append(ids, fmt.Sprint(e["entry_id"], ": ", e["title"]))
		}
		return strings.Join(ids, ", ")
	}
	for _, seed := range []struct {
		token string
		entry map[string]any
	}{{zeus, journalBody("ZEUS", "C-1", "zeus-1", 100)}, {eve, journalBody("EVE", "C-0", "eve-before", 100)}} {
		if code, body := api.callWith(t, seed.token, http.MethodPost, "/api/agents/journal", seed.entry); code != http.StatusCreated {
			t.Fatalf("the entry before the attack: %d %v", code, body)
		}
	}
	zeusBefore, eveBefore := read("ZEUS", "C-1"), read("EVE", "C-0")
	sizeBefore := dbBytes(j.Store.URI)
	rssBefore, _ := procStatusKB(j.cmd.Process.Pid, "VmRSS")

	start := time.Now()
	small := tally(burst(api.base, eve, http.MethodPost, "/api/agents/journal", 200, nil, func(i int) any {
		return journalBody("EVE", "C-small", fmt.Sprintf("small-%d", i), 10)
	}))
	huge := tally(burst(api.base, eve, http.MethodPost, "/api/agents/journal", 1000, nil, func(i int) any {
		return journalBody("EVE", "C-huge", fmt.Sprintf("huge-%d", i), 55_000)
	}))
	large := tally(burst(api.base, eve, http.MethodPost, "/api/agents/journal", 1000, nil, func(i int) any {
		return journalBody("EVE", fmt.Sprintf("C-%d", 1+i/200), fmt.Sprintf("large-%d", i), 15_000)
	}))
	took := time.Since(start)
	sizeAfter := dbBytes(j.Store.URI)
	rssAfter, _ := procStatusKB(j.cmd.Process.Pid, "VmRSS")
	t.Logf("small entries: %v; 55 KB entries: %v; 15 KB entries: %v; 2,200 requests in %s", small, huge, large, took.Round(time.Millisecond))
	t.Logf("database %.1f → %.1f MB, Jarvis's RSS %.0f → %.0f MB", float64(sizeBefore)/(1<<20), float64(sizeAfter)/(1<<20),
		rssBefore/1024, rssAfter/1024)

	if want := map[string]int{"201": 150, "429 fleet.journal.max_cycle_entries": 50}; fmt.Sprint(small) != fmt.Sprint(want) {
		t.Errorf("small entries answered %v, want %v", small, want)
	}
	if huge["413 fleet.journal.max_entry_bytes"] != 1000 {
		t.Errorf("55 KB entries answered %v, want every one 413 naming fleet.journal.max_entry_bytes", huge)
	}
	if n := large["201"] + large["413 fleet.journal.max_cycle_bytes"] + large["413 fleet.journal.max_agent_bytes"]; n != 1000 ||
		large["413 fleet.journal.max_cycle_bytes"] == 0 || large["413 fleet.journal.max_agent_bytes"] == 0 {
		t.Errorf("15 KB entries answered %v, want each taken or refused 413 naming max_cycle_bytes or max_agent_bytes, both reached", large)
	}
	st := j.openStore(t)
	// An entry of 15,000 bytes of content, a title and the signature is
	// about 15,090 bytes: 138 or 139 fit in a cycle's 2 MiB.
	var held []string
	for c := 1; c <= 5; c++ {
		used, err := st.AgentJournal().JournalUsage(ctx, "EVE", fmt.Sprintf("C-%d", c))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, fmt.Sprint(used.CycleEntries))
		if used.CycleBytes > maxCycleBytes || used.AgentBytes > maxAgentBytes || used.AgentBytes < maxAgentBytes-16<<10 {
			t.Errorf("C-%d holds %d bytes, EVE %d: want at most %d and %d, EVE within an entry of it", c, used.CycleBytes, used.AgentBytes,
				maxCycleBytes, maxAgentBytes)
		}
	}
	if got := strings.Join(held, " "); !strings.HasPrefix(got, "139 139 139 ") || !strings.HasSuffix(got, " 0") {
		t.Errorf("C-1 … C-5 hold %s entries, want three full cycles (139), part of a fourth, none in the fifth", got)
	}
	if zeusAfter, eveAfter := read("ZEUS", "C-1"), read("EVE", "C-0"); zeusAfter != zeusBefore || eveAfter != eveBefore {
		t.Errorf("the journals before the attack changed: ZEUS %q (was %q), EVE %q (was %q)", zeusAfter, zeusBefore, eveAfter, eveBefore)
	}
	if read("EVE", "C-huge") != "" {
		t.Error("a refused 55 KB entry was stored")
	}
	// 7 MiB of entries, and the indexes and write-ahead log around them.
	if grown := sizeAfter - sizeBefore; grown > 3*maxAgentBytes {
		t.Errorf("the database grew %d bytes, want at most about three times max_agent_bytes", grown)
	}

	// A reader pages through the first big cycle.
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		path := "/api/agents/journal?agent=EVE&cycle=C-1&limit=50"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		code, body := api.callWith(t, zeus, http.MethodGet, path, nil)
		if code != http.StatusOK {
			t.Fatalf("page %d: %d %v", pages+1, code, body)
		}
		pages++
		entries := body["entries"].([]any)
		if len(entries) > 50 {
			t.Fatalf("page %d holds %d entries, more than the 50 asked", pages, len(entries))
		}
		for _, e := range entries {
			id := e.(map[string]any)["entry_id"].(string)
			if seen[id] {
				t.Errorf("entry %s on two pages", id)
			}
			seen[id] = true
		}
		next, _ := body["next_cursor"].(string)
		if next == "" || pages > 10 {
			break
		}
		cursor = next
	}
	if len(seen) != 139 || pages != 3 {
		t.Errorf("C-1 read in %d pages holding %d entries, want 3 pages and 139", pages, len(seen))
	}
	code, body := api.callWith(t, zeus, http.MethodGet, "/api/agents/journal?agent=EVE&cycle=C-1", nil)
	if n := len(body["entries"].([]any)); code != http.StatusOK || n != 50 || body["next_cursor"] == nil {
		t.Errorf("a read without a limit: %d, %d entries, next %v; want fleet.journal.page_size (50) and a cursor", code, n, body["next_cursor"])
	}
	if code, body := api.callWith(t, zeus, http.MethodGet, "/api/agents/journal?agent=EVE&cycle=C-1&limit=101", nil); code != http.StatusBadRequest || body["field"] != "limit" {
		t.Errorf("a page of 101: %d %v, want 400 naming limit", code, body)
	}

	// Six readers at once, each asking for the largest page there is.
	rssBefore, _ = procStatusKB(j.cmd.Process.Pid, "VmRSS")
	reads := tally(burst(api.base, zeus, http.MethodGet, "/api/agents/journal?agent=EVE&cycle=C-1&limit=100", 6, nil,
		func(int) any { return nil }))
	rssAfter, _ = procStatusKB(j.cmd.Process.Pid, "VmRSS")
	t.Logf("six reads of the largest page at once: %v; Jarvis's RSS %.0f → %.0f MB", reads, rssBefore/1024, rssAfter/1024)
	if reads["200"] != 6 {
		t.Errorf("six reads answered %v, want 200 each", reads)
	}
}

// TestApprovalFlood: one agent's token sends 300 approval requests as fast
// as Jarvis answers. approvals.max_open of them are taken, relayed with
// their reactions; the rest are refused 429 naming the key, and the room is
// told that once. While that backlog is being sent, an admin's `!ping` and
// a supervisor's halt of another agent reach the room before the
// backlog's last relay: the outbox's urgent lane goes first.
func TestApprovalFlood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	const maxOpen = 40
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\n%s", port, floodAPIRate) +
			"fleet:\n  agents:\n    - name: EVE\n    - name: ZEUS\n" +
			fmt.Sprintf("approvals:\n  max_open: %d\n  rate: {count: 1000, window: 1h}\n", maxOpen)})
	room := j.joinRoom(t, alice)
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "EVE", "ZEUS")}
	api.waitUp(t, j)
	fromJarvis := tesths.MessageFrom(room, j.UserID)
	// The room hears Jarvis is ready before the flood starts.
	j.ask(t, alice, room, "!ping")

	answers := burst(api.base, api.tokens.agent["EVE"], http.MethodPost, "/api/approvals", 300,
		func(i int) map[string]string { return map[string]string{"Idempotency-Key": fmt.Sprintf("flood-%d", i)} },
		func(i int) any {
			return map[string]any{"action": fmt.Sprintf("flood request %03d", i), "reason": "flooding"}
		})
	got := tally(answers)
	if want := map[string]int{"201": maxOpen, "429 approvals.max_open": 300 - maxOpen}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("300 requests answered %v, want %v", got, want)
	}

	// The backlog is being sent: halt ZEUS and ask for a pong.
	st := j.openStore(t)
	backlog, err := st.Outbox().Depth(ctx)
	if err != nil || backlog < maxOpen {
		t.Fatalf("%d notices wait to be sent (%v): too few to stand in front of the halt and the pong", backlog, err)
	}
	sent := time.Now()
	code, opened := api.call(t, http.MethodPost, "/api/breaker/ZEUS/open", map[string]any{"severity": "safety", "reason": "halted mid-flood"})
	if code != http.StatusCreated {
		t.Fatalf("open ZEUS's breaker: %d %v", code, opened)
	}
	haltID := opened["event"].(map[string]any)["id"].(string)
	ping, err := alice.Say(ctx, room, "!ping")
	if err != nil {
		t.Fatal(err)
	}
	halt, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return fromJarvis(evt) && strings.Contains(tesths.Body(evt), haltID)
	})
	if err != nil {
		t.Fatalf("no halt notice: %v", err)
	}
	haltIn := time.Since(sent)
	pong, err := alice.WaitFor(ctx, waitReply, j.replyTo(ping))
	if err != nil {
		t.Fatalf("no pong: %v", err)
	}
	pongIn := time.Since(sent)
	isRelay := func(evt *event.Event) bool {
		return fromJarvis(evt) && strings.Contains(tesths.Body(evt), "asks for approval to: flood request")
	}
	for i, a := range answers {
		if a.code != http.StatusCreated {
			continue
		}
		action := fmt.Sprintf("flood request %03d", i)
		if _, err := alice.WaitFor(ctx, 2*time.Minute, func(evt *event.Event) bool {
			return isRelay(evt) && strings.Contains(tesths.Body(evt), action)
		}); err != nil {
			t.Fatalf("the relay of %q never reached the room: %v", action, err)
		}
	}
	backlogIn := time.Since(sent)

	// Where the halt and the pong came among the relays, in the order the
	// room shows them.
	relaysBefore := map[id.EventID]int{}
	relays := 0
	for _, evt := range alice.Events(fromJarvis) {
		switch {
		case isRelay(evt):
			relays++
		case evt.ID == halt.ID || evt.ID == pong.ID:
			relaysBefore[evt.ID] = relays
		}
	}
	t.Logf("%d notices waiting; halt notice in %s (after %d relays), pong in %s (after %d), the backlog's last relay in %s",
		backlog, haltIn.Round(time.Millisecond), relaysBefore[halt.ID], pongIn.Round(time.Millisecond), relaysBefore[pong.ID],
		backlogIn.Round(time.Millisecond))
	for _, evt := range []*event.Event{halt, pong} {
		if relaysBefore[evt.ID] >= maxOpen {
			t.Errorf("%q came after all %d relays: it waited behind the flood", tesths.Body(evt), maxOpen)
		}
	}
	isTold := func(evt *event.Event) bool {
		body := tesths.Body(evt)
		return fromJarvis(evt) && strings.Contains(body, "EVE") && strings.Contains(body, "is asking for approval past") &&
			strings.Contains(body, "approvals.max_open")
	}
	if _, err := alice.WaitFor(ctx, waitReply, isTold); err != nil {
		t.Errorf("the room was never told that EVE's requests are refused: %v", err)
	}
	if told := alice.Events(isTold); len(told) != 1 {
		t.Errorf("the room was told %d times that EVE's requests are refused, want once", len(told))
	}
	pending, err := st.Approvals().PendingApprovals(ctx)
	if err != nil || len(pending) != maxOpen {
		t.Errorf("%d requests pending (%v), want %d: nothing refused was stored", len(pending), err, maxOpen)
	}
}
