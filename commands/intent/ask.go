package intent

import (
	"regexp"
	"strings"
)

// Ask reads a sentence addressed to Jarvis as a question about its
// records, and names the command that answers it: "help", or "ask" and a
// topic with its arguments ("ask breakers ZEUS", "ask tripped overnight").
// agents are the configured agent names. Requests to be told later ("tell
// me when ZEUS is halted") are tripwires, not questions, and are left
// alone; so is anything Ask does not know.
func Ask(text string, agents []string) (command string, args []string, ok bool) {
	if len(text) > maxBytes || askWatch.MatchString(strings.ToLower(text)) {
		return "", nil, false
	}
	t := askText(text)
	if t == "" {
		return "", nil, false
	}
	if askHelp.MatchString(t) {
		return "help", nil, true
	}
	for _, q := range askTopics {
		if !q.re.MatchString(t) {
			continue
		}
		var args []string
		if q.agent {
			if a := agentIn(t, agents); a != "" {
				args = append(args, a)
			}
		}
		if q.arg != nil {
			args = append(args, q.arg(t)...)
		}
		return q.command, args, true
	}
	return "", nil, false
}

// askText lowers a sentence and drops what does not change the question:
// "please", "could you tell me", trailing punctuation, doubled spaces.
func askText(text string) string {
	t := strings.ToLower(strings.TrimSpace(strings.ToValidUTF8(text, "")))
	t = strings.NewReplacer("’", "'", "‘", "'").Replace(t)
	t = strings.TrimRight(t, "?!. ")
	t = askPolite.ReplaceAllString(t, "")
	return strings.Join(strings.Fields(t), " ")
}

var (
	askPolite = regexp.MustCompile(`^((please|so|and|well|quick question)[, ]+)*((can|could|would) you (please )?(tell|show) me[, ]*|tell me[, ]+|show me[, ]+)?|[, ]+please$`)
	askWatch  = regexp.MustCompile(`\b(let me know|alert me|ping me|notify me|warn me|message me|keep an eye|tell me (when|if|as soon as|once|whenever)|remind me|watch (for|out|the|when|if))\b`)
	askHelp   = regexp.MustCompile(`^(help|help me|help please|what can you do( for me)?|what do you do|what can i (ask|say)( you)?|what do you understand|how do you work|how does this work|what are your commands|(list|show) (the |your )?commands|(your |the )?commands)$`)
)

// askTopic is one question and the command that answers it.
type askTopic struct {
	re      *regexp.Regexp
	command string
	// agent: the question may name an agent, which becomes the first
	// argument.
	agent bool
	// arg reads further arguments from the sentence.
	arg func(t string) []string
}

// askTopics are tried in order; the first that matches answers.
var askTopics = []askTopic{
	{re: regexp.MustCompile(`\b(halted|halt|halts|stopped|paused|breakers?|circuit)\b`), command: "ask breakers", agent: true},
	{re: regexp.MustCompile(`\b(waiting (for|on) (me|my)|need(s|ed)? my (decision|answer|approval|input|ok)|for me to (decide|answer|approve)|decisions?|approvals?|questions? for me|(have|got) (anything|something) to (decide|answer|approve)|my turn)\b`),
		command: "ask decisions"},
	{re: regexp.MustCompile(`\b(blocked|stuck)\b`), command: "ask cards", arg: func(string) []string { return []string{"blocked"} }},
	{re: regexp.MustCompile(`\b(cards?|backlog|work items?)\b`), command: "ask cards"},
	{re: regexp.MustCompile(`\b(trip|tripped|trips|fire|fired|went off|triggered|miss|missed|happened)\b`), command: "ask tripped", arg: askSpan},
	{re: regexp.MustCompile(`\b(am i watching|do i watch|are you watching|my tripwires|tripwires|what do i have armed|watching for me|my alerts|my watches)\b`),
		command: "ask watching"},
	{re: regexp.MustCompile(`\b(lease|in charge|standby|which jarvis|who is leading|who leads)\b`), command: "ask lease"},
	{re: regexp.MustCompile(`^(how are you( doing)?|are you (ok|okay|alright|alive|up|there|running|well)|how is jarvis|how's jarvis|hows jarvis|how are things|what version( are you)?|which version|how long have you been (up|running)|your status|status|uptime)\b`),
		command: "ask jarvis"},
}

// askSpans are the words that say how far back a "did anything trip …"
// question looks, and the span each names.
var askSpans = []struct {
	re   *regexp.Regexp
	span string
}{
	{regexp.MustCompile(`\b(overnight|last night|while i (was )?(slept|sleeping|asleep)|this morning|since (last night|i went to bed))\b`), "overnight"},
	{regexp.MustCompile(`\b(today|this afternoon)\b`), "today"},
	{regexp.MustCompile(`\byesterday\b`), "yesterday"},
	{regexp.MustCompile(`\b(this week|last week|past week|last 7 days|week)\b`), "week"},
	{regexp.MustCompile(`\b(last hour|past hour|in the hour)\b`), "hour"},
}

// askSpan reads how far back a "did anything trip …" question looks.
func askSpan(t string) []string {
	for _, s := range askSpans {
		if s.re.MatchString(t) {
			return []string{s.span}
		}
	}
	return nil
}

// agentIn returns the configured agent a sentence names, as configured.
func agentIn(t string, agents []string) string {
	for _, a := range agents {
		if a == "" {
			continue
		}
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(strings.ToLower(a)) + `\b`).MatchString(t) {
			return a
		}
	}
	return ""
}
