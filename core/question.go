package core

// Question is something Jarvis asks one person to confirm: a tripwire
// proposal, a `!sys restart`, a card set to publish. The channel the
// person is in puts it to them: a Matrix room with ✅ and ❌ already on
// it, or a hint to reply in words where reactions do not reach Jarvis; a
// terminal with a [y/N] prompt.
type Question struct {
	// Key is the key of the notice that asks; the answer resolves the
	// pending action of the same key.
	Key    string
	RoomID string
	// TargetEvent is the message the question answers, when it is asked
	// in the room of that message.
	TargetEvent string
	Text        string
	// Yes and No are the words that answer it where people write their
	// answers ("arm" / "dismiss").
	Yes, No string
	// YesDoes and NoDoes say what each answer does ("restart" /
	// "cancel"), for a channel that tells how to answer in words of its
	// own ("React ✅ to restart, ❌ to cancel."); empty when Text says it.
	YesDoes, NoDoes string
}
