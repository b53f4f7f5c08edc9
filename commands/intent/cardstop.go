package intent

import (
	"regexp"
	"strings"
)

// CardStop reads a NO-GO said in plain words to Jarvis ("stop the CSV
// export", "cancel the report card please") and returns the words that
// name the work, for matching against the cards' goals. Requests about
// something else that start the same way ("stop reminding me", "cancel
// my reminder") are left alone.
func CardStop(text string) (words []string, ok bool) {
	if len(text) > maxBytes {
		return nil, false
	}
	t := askText(text)
	m := cardStopRe.FindStringSubmatch(t)
	if m == nil || cardStopNot.MatchString(m[1]) {
		return nil, false
	}
	for _, w := range strings.FieldsFunc(m[1], func(r rune) bool { return !isWordRune(r) }) {
		if !cardStopFiller[w] {
			words = append(words, w)
		}
	}
	return words, len(words) > 0
}

var (
	cardStopRe  = regexp.MustCompile(`^(?:stop|cancel|abort|scrap|drop|call off)(?: (?:working on|work on|the work on))? (.+)$`)
	cardStopNot = regexp.MustCompile(`^(?:me|my|reminding|telling|watching|pinging|alerting|notifying|that|it|this|talking|everything|all)\b`)
	// cardStopFiller are words that name no work.
	cardStopFiller = map[string]bool{"the": true, "a": true, "an": true, "card": true, "cards": true, "task": true,
		"work": true, "job": true, "on": true, "for": true, "of": true, "please": true, "now": true}
)
