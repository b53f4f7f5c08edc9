package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestSendDeadline puts a proxy between Jarvis and the homeserver that
// passes one of Jarvis's sends on, lets the homeserver make the event, and
// then holds its answer for two minutes, as a homeserver after a restart
// now and then does. Jarvis gives the send up at homeserver.request_timeout
// (10 s here: short, yet long enough for the room Jarvis creates at start
// on a busy homeserver), looks in the room, finds the event and does not send it
// again; the notices queued behind it arrive within 30 s, and every notice
// is in the room once.
func TestSendDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy := newStallProxy(t, hs.URL)
	proxied := *hs
	proxied.URL = proxy.URL
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, hs: &proxied,
		env: []string{"JARVIS_HOMESERVER_REQUEST_TIMEOUT=10s"}})
	room := j.joinRoom(t, alice)
	st := j.openStore(t)

	enqueue := func(i int) {
		t.Helper()
		err := st.Outbox().Enqueue(ctx, core.Notice{Key: fmt.Sprintf("deadline-test:%d", i), RoomID: room.String(),
			Kind: core.NoticeMessage, Body: fmt.Sprintf("notice #%d", i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	proxy.stallNext(func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/rooms/"+room.String()+"/send/")
	})
	enqueue(0)
	select {
	case <-proxy.stalled:
	case <-time.After(waitReply):
		t.Fatalf("Jarvis sent nothing to the room within %s:\n%s", waitReply, j.logs.String())
	}
	const queued = 3
	for i := 1; i < queued; i++ {
		enqueue(i)
	}
	for i := range queued {
		want := fmt.Sprintf("notice #%d", i)
		match := func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && tesths.Body(evt) == want
		}
		if _, err := alice.WaitFor(ctx, 30*time.Second, match); err != nil {
			t.Fatalf("%q did not arrive while the homeserver held the answer to a send: %v\n%s", want, err, j.logs.String())
		}
	}
	j.sentOnce(t, alice, room)
	if !strings.Contains(j.logs.String(), "An earlier attempt was delivered; not sending again") {
		t.Errorf("Jarvis did not find the held send in the room before sending again:\n%s", j.logs.String())
	}
}
