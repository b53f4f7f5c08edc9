package intent

import (
	"reflect"
	"strings"
	"testing"
)

// askCases are sentences addressed to Jarvis and the command each
// becomes ("" for none: talk, or a request to be told later, which is a
// tripwire).
var askCases = []struct {
	text string
	want string
}{
	// Help.
	{"help", "help"},
	{"Help!", "help"},
	{"what can you do?", "help"},
	{"What can you do for me?", "help"},
	{"what can I ask you?", "help"},
	{"how does this work?", "help"},
	{"show me your commands", "help"},
	{"please, what do you understand?", "help"},
	// Breakers.
	{"is anything halted?", "ask breakers"},
	{"Is anything halted right now?", "ask breakers"},
	{"why is ZEUS stopped?", "ask breakers ZEUS"},
	{"why was zeus halted", "ask breakers ZEUS"},
	{"is EVE halted?", "ask breakers EVE"},
	{"what is the status of the breakers?", "ask breakers"},
	{"what's the status of the breakers?", "ask breakers"},
	{"any breakers open?", "ask breakers"},
	{"are any agents paused?", "ask breakers"},
	{"which agents are halted", "ask breakers"},
	{"could you tell me why Ani is stopped?", "ask breakers Ani"},
	{"has the circuit breaker tripped for ZEUS?", "ask breakers ZEUS"},
	// Cards.
	{"any cards blocked?", "ask cards blocked"},
	{"Are any cards blocked?", "ask cards blocked"},
	{"what's blocked?", "ask cards blocked"},
	{"which cards are stuck?", "ask cards blocked"},
	{"is anything blocked", "ask cards blocked"},
	{"how is the backlog?", "ask cards"},
	{"how many cards are there?", "ask cards"},
	{"what cards are open?", "ask cards"},
	{"show me the cards", "ask cards"},
	{"what's in the backlog?", "ask cards"},
	// Decisions waiting for the person.
	{"what is waiting for me?", "ask decisions"},
	{"what's waiting for me?", "ask decisions"},
	{"anything waiting on me?", "ask decisions"},
	{"what needs my decision?", "ask decisions"},
	{"any decisions for me?", "ask decisions"},
	{"do I have anything to decide?", "ask decisions"},
	{"any questions for me?", "ask decisions"},
	{"what needs my approval?", "ask decisions"},
	{"are there approvals pending?", "ask decisions"},
	{"is it my turn?", "ask decisions"},
	// Tripwires and the journal.
	{"what am I watching?", "ask watching"},
	{"What am I watching", "ask watching"},
	{"what are my tripwires?", "ask watching"},
	{"which tripwires do I have?", "ask watching"},
	{"what are you watching for me?", "ask watching"},
	{"list my alerts", "ask watching"},
	{"did anything trip overnight?", "ask tripped overnight"},
	{"Did anything trip last night?", "ask tripped overnight"},
	{"what tripped while I was asleep?", "ask tripped overnight"},
	{"did anything trip today?", "ask tripped today"},
	{"what went off yesterday?", "ask tripped yesterday"},
	{"any trips this week?", "ask tripped week"},
	{"did anything fire in the last hour?", "ask tripped hour"},
	{"what did I miss?", "ask tripped"},
	{"what happened overnight?", "ask tripped overnight"},
	{"did any of my tripwires trip?", "ask tripped"},
	// The lease and Jarvis itself.
	{"who holds the lease?", "ask lease"},
	{"which jarvis is in charge?", "ask lease"},
	{"is there a standby?", "ask lease"},
	{"how are you?", "ask jarvis"},
	{"are you ok?", "ask jarvis"},
	{"are you alive?", "ask jarvis"},
	{"what version are you?", "ask jarvis"},
	{"how long have you been up?", "ask jarvis"},
	// Not questions Ask answers.
	{"tell me when ZEUS is halted", ""},
	{"let me know if a card is blocked", ""},
	{"ping me when anything trips", ""},
	{"alert me when EVE goes offline", ""},
	{"the vault looks low today", ""},
	{"good morning", ""},
	{"thanks!", ""},
	{"is EVE ok?", ""},
	{"what's the fleet doing?", ""},
	{"", ""},
	{"???", ""},
}

func TestAsk(t *testing.T) {
	for _, tt := range askCases {
		t.Run(tt.text, func(t *testing.T) {
			name, args, ok := Ask(tt.text, intentAgents)
			got := strings.Join(append([]string{name}, args...), " ")
			if !ok {
				got = ""
			}
			if got != tt.want {
				t.Errorf("Ask(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// FuzzAsk: whatever is typed, Ask does not panic, answers the same way
// twice, names only commands it knows, and passes on only agent names
// and span words, never the sentence's own text.
func FuzzAsk(f *testing.F) {
	for _, tt := range askCases {
		f.Add(tt.text)
	}
	known := map[string]bool{"help": true, "ask breakers": true, "ask cards": true, "ask decisions": true, "ask watching": true,
		"ask tripped": true, "ask lease": true, "ask jarvis": true}
	words := map[string]bool{"blocked": true, "overnight": true, "today": true, "yesterday": true, "week": true, "hour": true}
	for _, a := range intentAgents {
		words[a] = true
	}
	f.Fuzz(func(t *testing.T, text string) {
		name, args, ok := Ask(text, intentAgents)
		if !ok {
			if name != "" || args != nil {
				t.Fatalf("%q is no question but gives %q %q", text, name, args)
			}
			return
		}
		if !known[name] {
			t.Fatalf("%q gives the unknown command %q", text, name)
		}
		for _, a := range args {
			if !words[a] {
				t.Fatalf("%q passes on %q", text, a)
			}
		}
		n2, a2, ok2 := Ask(text, intentAgents)
		if n2 != name || !reflect.DeepEqual(a2, args) || !ok2 {
			t.Fatalf("%q gives %q %q, then %q %q", text, name, args, n2, a2)
		}
	})
}
