package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/store"
)

// newAttackFixture is the fleet API with EVE, configured as
// config.example.yaml has it with edit applied.
func newAttackFixture(t *testing.T, edit func(*api.Config)) *fleetAPIFixture {
	t.Helper()
	cfg := exampleAPIConfig(t)
	edit(&cfg)
	return newFleetAPIFixtureOn(t, store.SQLite, cfg, coretest.NewClock(time.Date(2026, 4, 17, 0, 0, 1, 0, time.UTC)),
		fleet.AgentConfig{Name: "EVE"})
}

// readAnswer reads the HTTP answer on conn: its status line and body, or
// "closed" and why when the server closed the connection instead.
func readAnswer(conn net.Conn) string {
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "closed: " + err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + string(body)
}

// TestSlowBodyIsCutOff: a heartbeat whose body comes one byte a second is
// cut off by the read timeout long before it is complete; the agent is
// told its body did not arrive in time, and no heartbeat is stored.
func TestSlowBodyIsCutOff(t *testing.T) {
	fx := newAttackFixture(t, func(c *api.Config) { c.ReadTimeout = time.Second })
	conn, err := net.Dial("tcp", api.ServeLoopback(t, fx.server))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := jsonBody(heartbeatBase, nil)
	fmt.Fprintf(conn, "POST /api/agents/heartbeat HTTP/1.1\r\nHost: jarvis\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", fx.tokens.agent["EVE"], len(body))
	answered := make(chan string, 1)
	go func() { answered <- readAnswer(conn) }()
	drip := time.NewTicker(time.Second)
	defer drip.Stop()
	sent, answer := 0, ""
	for answer == "" && sent < len(body) {
		select {
		case answer = <-answered:
		case <-drip.C:
			if _, err := conn.Write([]byte{body[sent]}); err != nil {
				answer = <-answered
				break
			}
			sent++
		}
	}
	if sent == len(body) {
		t.Fatalf("all %d bytes of the body went through, one a second, without the server cutting it off", sent)
	}
	if !strings.HasPrefix(answer, "400") || !strings.Contains(answer, "not received within the read timeout") {
		t.Errorf("after %d of %d bytes the agent saw %q; want a 400 saying the body did not arrive in time", sent, len(body), answer)
	}
	if n := fx.count(t, "agent_heartbeat"); n != 0 {
		t.Errorf("%d heartbeats stored from a body cut off; want none", n)
	}
}

// TestIdleConnectionsDoNotKeepClientsOut: twice as many idle connections
// as the cap allows fill it and queue behind it; a real client waits
// behind them, and is answered once the read timeout has closed them. It
// is answered only after the first of them was closed, so the cap held.
func TestIdleConnectionsDoNotKeepClientsOut(t *testing.T) {
	const capacity = 4
	fx := newAttackFixture(t, func(c *api.Config) {
		c.MaxConnections, c.ReadTimeout, c.IdleTimeout = capacity, 500*time.Millisecond, 500*time.Millisecond
	})
	addr := api.ServeLoopback(t, fx.server)
	closed := make(chan time.Time, 2*capacity)
	for range 2 * capacity {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		go func() {
			// The server sends an idle connection nothing: Read returns
			// when it closes it.
			_, _ = conn.Read(make([]byte, 1))
			closed <- time.Now()
		}()
	}
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Get("http://" + addr + "/healthz")
	answeredAt := time.Now()
	if err != nil {
		t.Fatalf("a real client behind %d idle connections: %v", 2*capacity, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a real client behind the idle connections got %d, want 200", resp.StatusCode)
	}
	// Every idle connection is closed by the server, in time.
	var first time.Time
	for i := range 2 * capacity {
		select {
		case at := <-closed:
			if i == 0 {
				first = at
			}
		case <-time.After(time.Minute):
			t.Fatalf("%d of %d idle connections still open a minute on", 2*capacity-i, 2*capacity)
		}
	}
	if !first.Before(answeredAt) {
		t.Errorf("the real client was answered before any idle connection was closed: the cap of %d did not hold", capacity)
	}
}

// TestHeaderSizeLimit: headers larger than api.max_header_bytes get 431
// and reach no handler.
func TestHeaderSizeLimit(t *testing.T) {
	fx := newAttackFixture(t, func(c *api.Config) { c.MaxHeaderBytes = 4096 })
	req, _ := http.NewRequest(http.MethodPost, "http://"+api.ServeLoopback(t, fx.server)+"/api/agents/heartbeat",
		strings.NewReader(jsonBody(heartbeatBase, nil)))
	req.Header.Set("Authorization", "Bearer "+fx.tokens.agent["EVE"])
	req.Header.Set("X-Padding", strings.Repeat("x", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB of headers got %d, want 431", resp.StatusCode)
	}
	if n := fx.count(t, "agent_heartbeat"); n != 0 {
		t.Errorf("%d heartbeats stored from a request refused; want none", n)
	}
}
