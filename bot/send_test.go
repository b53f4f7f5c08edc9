package bot

import (
	"testing"

	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
)

// TestDetached: a notice whose target notice was pruned (retention.outbox)
// still goes out, without the relation, instead of holding its room's
// queue; a reaction to it has nothing to go on.
func TestDetached(t *testing.T) {
	tests := []struct {
		name      string
		kind      core.NoticeKind
		target    id.EventID
		targetKey string
		want      core.NoticeKind
	}{
		{"edit of a kept message", core.NoticeEdit, "$halt", "breaker:1", core.NoticeEdit},
		{"edit of a pruned message", core.NoticeEdit, "", "breaker:1", core.NoticeMessage},
		{"thread reply to a pruned message", core.NoticeMessage, "", "trip:1", core.NoticeMessage},
		{"reaction to a pruned message", core.NoticeReaction, "", "confirm:1", ""},
		{"reaction to a kept message", core.NoticeReaction, "$ask", "confirm:1", core.NoticeReaction},
		{"message with no relation", core.NoticeMessage, "", "", core.NoticeMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := detached(tt.kind, tt.target, tt.targetKey); got != tt.want {
				t.Errorf("detached(%s, %q, %q) = %q, want %q", tt.kind, tt.target, tt.targetKey, got, tt.want)
			}
		})
	}
}
