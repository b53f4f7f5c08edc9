package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/tesths"
)

// TestSendDeadline puts a proxy between Jarvis and the homeserver that
// passes one of Jarvis's sends on, lets the homeserver make the event, and
// then holds its answer for two minutes, as a homeserver after a restart
// now and then does. Jarvis gives the send up at homeserver.request_timeout
// (3 s here), looks in the room, finds the event and does not send it
// again; the notices queued behind it arrive within 30 s, and every notice
// is in the room once.
func TestSendDeadline(t *testing.T) {
	ctx := context.Background()
	proxy := newStallProxy(t, hs.URL)
	proxied := *hs
	proxied.URL = proxy.URL
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, hs: &proxied,
		env: []string{"JARVIS_HOMESERVER_REQUEST_TIMEOUT=3s"}})
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
	proxy.stallNext(room)
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

// stallProxy passes requests on to a homeserver; the first send of an
// event to the room it is armed for goes through, and its answer is held
// until the client gives up or two minutes pass.
type stallProxy struct {
	*httptest.Server
	next    http.RoundTripper
	stalled chan struct{}

	mu   sync.Mutex
	room id.RoomID
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{next: http.DefaultTransport, stalled: make(chan struct{})}
	p.Server = httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:      func(r *httputil.ProxyRequest) { r.SetURL(to) },
		Transport:    p,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	})
	t.Cleanup(p.Close)
	return p
}

// stallNext arms the proxy for the next send to room.
func (p *stallProxy) stallNext(room id.RoomID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.room = room
}

func (p *stallProxy) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPut || !strings.Contains(req.URL.Path, "/send/") {
		return resp, err
	}
	p.mu.Lock()
	stall := p.room != "" && strings.Contains(req.URL.Path, "/rooms/"+p.room.String()+"/send/")
	if stall {
		p.room = ""
	}
	p.mu.Unlock()
	if !stall {
		return resp, nil
	}
	close(p.stalled)
	select {
	case <-req.Context().Done():
		resp.Body.Close()
		return nil, req.Context().Err()
	case <-time.After(2 * time.Minute):
		return resp, nil
	}
}
