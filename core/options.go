package core

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// CheckOptions checks the options a person is asked to choose from (a
// worker's question, an agent's approval request): each one line, not
// empty, at most maxLen bytes, none repeated. The field at fault is
// options[i].
func CheckOptions(options []string, maxLen int) error {
	for i, o := range options {
		field := fmt.Sprintf("options[%d]", i)
		switch {
		case strings.TrimSpace(o) == "":
			return Invalid(field, "is empty")
		case len(o) > maxLen:
			return Invalid(field, "longer than %d bytes", maxLen)
		case strings.ContainsAny(o, "\r\n"):
			return Invalid(field, "must be one line")
		case slices.Index(options, o) < i:
			return Invalid(field, "repeats options[%d]", slices.Index(options, o))
		}
	}
	return nil
}

// DeadlineText writes a deadline unambiguously for people anywhere.
func DeadlineText(t time.Time) string { return t.UTC().Format("Mon 2 Jan 2006 15:04 MST") }

// ViaText is " via <network>" for an answer from a network, "" without one.
func ViaText(network string) string {
	if network == "" {
		return ""
	}
	return " via " + network
}
