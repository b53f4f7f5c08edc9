package integration

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// host is a second machine for a test: a network namespace of its own,
// joined to this one (where PostgreSQL and the homeserver run) by a veth
// pair. A Jarvis started on it reaches the homeserver and the database
// only over that link, through relays listening on this end of it, so
// cutting the link cuts it off from both while it keeps running.
type host struct {
	t      testing.TB
	name   string // the namespace
	link   string // this end of the veth pair
	here   string // this end's address
	there  string // the namespace's address
	relays sync.WaitGroup
	// hsURL and dbURI are the homeserver and the database as the host
	// reaches them.
	hsURL, dbURI string
}

// twoHosts makes two hosts whose Jarvis reach the package's homeserver and
// the database db names; they are removed when t ends, passed or failed.
// Without root or network namespaces the test is skipped, saying why.
func twoHosts(t *testing.T, db string) [2]*host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("two-host tests need root, for network namespaces (ip netns); CI runs them as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("two-host tests need the ip command (iproute2), for network namespaces")
	}
	var hosts [2]*host
	for i := range hosts {
		hosts[i] = newHost(t, i)
		hosts[i].reach(db)
	}
	return hosts
}

// reach relays the package's homeserver and the database db names to the
// host and sets hsURL and dbURI to them.
func (h *host) reach(db string) {
	h.t.Helper()
	h.hsURL = "http://" + h.relay(strings.TrimPrefix(hs.URL, "http://"))
	u, err := url.Parse(db)
	if err != nil {
		h.t.Fatalf("database URI: %v", err)
	}
	u.Host = h.relay(u.Host)
	h.dbURI = u.String()
}

// newHost makes the namespace and its link. Names and addresses are
// random, so that concurrent runs on one machine do not collide.
func newHost(t testing.TB, i int) *host {
	t.Helper()
	var r [3]byte
	_, _ = rand.Read(r[:])
	tag := fmt.Sprintf("%x%d", r, i)
	// A /30 in 10.0.0.0/8 picked by the random tag: this end .1, the host .2.
	base := int(r[2] &^ 3)
	h := &host{t: t, name: "jarvis-" + tag, link: "jv" + tag + "a",
		here:  fmt.Sprintf("10.%d.%d.%d", r[0], r[1], base+1),
		there: fmt.Sprintf("10.%d.%d.%d", r[0], r[1], base+2)}
	if out, err := exec.Command("ip", "netns", "add", h.name).CombinedOutput(); err != nil {
		t.Skipf("two-host tests need network namespaces: ip netns add: %v: %s", err, out)
	}
	t.Cleanup(h.remove)
	peer := "jv" + tag + "b"
	h.ip("link", "add", h.link, "type", "veth", "peer", "name", peer, "netns", h.name)
	h.ip("addr", "add", h.here+"/30", "dev", h.link)
	h.ip("link", "set", h.link, "up")
	h.ip("netns", "exec", h.name, "ip", "link", "set", "lo", "up")
	h.ip("netns", "exec", h.name, "ip", "addr", "add", h.there+"/30", "dev", peer)
	h.ip("netns", "exec", h.name, "ip", "link", "set", peer, "up")
	return h
}

// ip runs the ip command, failing the test if it fails.
func (h *host) ip(args ...string) {
	h.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		h.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// remove deletes the namespace and the link. It runs after the test's
// Jarvis processes are stopped (cleanups run last first).
func (h *host) remove() {
	_ = exec.Command("ip", "link", "del", h.link).Run()
	if out, err := exec.Command("ip", "netns", "del", h.name).CombinedOutput(); err != nil {
		h.t.Errorf("remove network namespace %s: %v: %s", h.name, err, out)
	}
	h.relays.Wait()
}

// command returns cmd run on the host.
func (h *host) command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.name, name}, args...)...)
}

// cut takes the link down: the host keeps running, and reaches nothing.
func (h *host) cut() { h.ip("link", "set", h.link, "down") }

// mend brings the link up again.
func (h *host) mend() { h.ip("link", "set", h.link, "up") }

// relay listens on this end of the link and passes every connection on
// to target, a host:port here; it returns the address to dial from the
// host. Connections are cut when the test ends.
func (h *host) relay(target string) string {
	h.t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(h.here, "0"))
	if err != nil {
		h.t.Fatalf("relay to %s: %v", target, err)
	}
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if open == nil {
			return false
		}
		if add {
			open[c] = true
		} else {
			delete(open, c)
		}
		return true
	}
	h.t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		open = nil
		mu.Unlock()
	})
	h.relays.Add(1)
	go func() {
		defer h.relays.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			if !track(in, true) || !track(out, true) {
				in.Close()
				out.Close()
				return
			}
			go pipe(in, out, track)
			go pipe(out, in, track)
		}
	}()
	return ln.Addr().String()
}

// pipe copies from one connection to the other until either ends, then
// closes both.
func pipe(from, to net.Conn, track func(net.Conn, bool) bool) {
	_, _ = io.Copy(to, from)
	from.Close()
	to.Close()
	track(from, false)
	track(to, false)
}
