package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core/notebook"
)

// sayDirect says body in the sender's direct room with Jarvis.
func (h *harness) sayDirect(t *testing.T, sender, body string) []string {
	t.Helper()
	h.seq++
	return h.handle(t, Message{RoomID: "!dm:" + sender, EventID: "$d" + strings.Repeat("x", h.seq), Sender: sender, Body: body,
		Room: bridge.Room{Direct: true}, Addressed: true, Sent: h.clock.Now()})
}

func newNotebookHarness(t *testing.T) *remindHarness {
	t.Helper()
	rh := newRemindHarness(t)
	rh.proc.AddFeatures(Features{Notebook: notebook.NewService(rh.store.Notebook(), rh.clock)})
	return rh
}

func TestNotebookSentences(t *testing.T) {
	tests := []struct{ text, want string }{
		{"add a task: renew the certificate by Friday", "task add renew the certificate by Friday"},
		{"Add task renew the certificate", "task add renew the certificate"},
		{"new todo: buy milk", "task add buy milk"},
		{"todo: call the bank", "task add call the bank"},
		{"task: check why ZEUS halted", "task add check why ZEUS halted"},
		{"what are my tasks?", "task list"},
		{"what's on my list?", "task list"},
		{"show my todos", "task list"},
		{"note: the staging DB password rotates monthly", "note add the staging DB password rotates monthly"},
		{"take a note: Ana prefers mornings", "note add Ana prefers mornings"},
		{"remember that the vault key is in the safe", "note add the vault key is in the safe"},
		{"find my notes about staging", "note find staging"},
		{"what did I note about the vault?", "note find the vault?"},
		{"what notes do I have on Ana", "note find Ana"},
		{"show my notes", "note list"},
		{"idea: let agents vote on priorities", "idea add let agents vote on priorities"},
		{"I have an idea: a weekly digest", "idea add a weekly digest"},
		{"new idea - dark mode", "idea add dark mode"},
		{"what are my ideas?", "idea list"},
		{"I noted that yesterday", ""},
		{"the idea is good", ""},
		{"tasks are piling up", ""},
	}
	for _, tt := range tests {
		name, args, ok := notebookIntent(tt.text)
		got := strings.Join(append([]string{name}, args...), " ")
		if !ok {
			got = ""
		}
		if got != tt.want {
			t.Errorf("notebookIntent(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestTasksNotesAndIdeasArePersonal(t *testing.T) {
	rh := newNotebookHarness(t)
	wantText(t, "dated task", onlyReply(t, rh.sayDirect(t, alice, "add a task: renew the certificate by Friday")),
		"Task 1 added, due on Fri 4 Dec at 09:00 UTC: “renew the certificate”", "I'll remind you then")
	wantText(t, "task", onlyReply(t, rh.sayDirect(t, alice, "todo: tidy the wiki")), "Task 2 added: “tidy the wiki”")
	wantText(t, "note", onlyReply(t, rh.sayDirect(t, alice, "note: the staging DB password rotates monthly")),
		"Noted (3): “the staging DB password rotates monthly”", "Only you see it")
	onlyReply(t, rh.sayDirect(t, bob, "!note add the staging server is slow"))
	wantText(t, "idea", onlyReply(t, rh.say(t, alice, "jarvis, idea: let agents vote on priorities")), "I answered in our direct room")

	// Asked in the shared room, the list goes to the direct room.
	wantText(t, "tasks in the room", onlyReply(t, rh.say(t, alice, "jarvis, what are my tasks?")), "I answered in our direct room")
	waiting, _ := rh.store.Outbox().Waiting(context.Background(), 100)
	if last := waiting[len(waiting)-2]; last.ToUser != alice || !strings.Contains(last.Body, "renew the certificate") {
		t.Errorf("the task list went to %+v", last)
	}
	wantText(t, "tasks", onlyReply(t, rh.sayDirect(t, alice, "what are my tasks?")), "2 open", "`1` renew the certificate — due on Fri 4 Dec",
		"`2` tidy the wiki")
	wantText(t, "bob's tasks", onlyReply(t, rh.sayDirect(t, bob, "!task list")), "no open tasks")
	found := onlyReply(t, rh.sayDirect(t, alice, "find my notes about staging password"))
	wantText(t, "find", found, "the staging DB password rotates monthly")
	if strings.Contains(found, "slow") {
		t.Errorf("Alice's search shows Bob's note: %q", found)
	}
	wantText(t, "nothing found", onlyReply(t, rh.sayDirect(t, alice, "!note find zebra")), "None of your notes holds “zebra”")
	wantText(t, "bob done", onlyReply(t, rh.say(t, bob, "!task done 1")), "no open task 1")
	wantText(t, "done", onlyReply(t, rh.sayDirect(t, alice, "!task done 2")), "Done: “tidy the wiki”")
	wantText(t, "ideas", onlyReply(t, rh.sayDirect(t, alice, "!idea list")), "let agents vote on priorities")

	// The dated task reminds on Friday at 09:00.
	rh.clock.Advance(4 * 24 * time.Hour)
	wantText(t, "task reminder", only(t, rh.sweep(t)).Body, "Task due: renew the certificate")
}
