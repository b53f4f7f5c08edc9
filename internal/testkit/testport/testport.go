// Package testport hands out loopback ports for servers that tests start
// in other processes (the homeserver, PostgreSQL, Jarvis's API), where
// the test cannot bind and hold the listener itself.
//
// A port that the kernel picked for a listener on port 0 and that was then
// closed lies in the ephemeral range, where every outgoing connection on
// the machine takes its local port: by the time the server binds it, one
// may hold it, and a connect probe cannot see that. So a port here comes
// from outside the ephemeral range, is probed by binding it, and is
// reserved with a lock file that this process holds until it exits, so
// that the test processes that `go test` runs side by side never pick the
// same one.
package testport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// lowest is the lowest port handed out: below it lie the ports that
// services on a developer's machine commonly listen on.
const lowest = 10000

var (
	mu sync.Mutex
	// held keeps every lock file this process reserved a port with open
	// until it exits: closing one would release its port.
	held []*os.File
)

// Get returns a free port on 127.0.0.1, reserved for this process.
func Get() (int, error) {
	lo, hi := ephemeralRange()
	var candidates []int
	for p := lowest; p <= 65535; p++ {
		if p < lo || p > hi {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return 0, fmt.Errorf("no loopback port outside the ephemeral range %d-%d", lo, hi)
	}
	dir := lockDir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, err
	}
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		port := candidates[rand.IntN(len(candidates))]
		lock, err := reserve(dir, port)
		if err != nil {
			return 0, err
		}
		if lock == nil {
			continue
		}
		if !bindable(port) {
			lock.Close()
			continue
		}
		held = append(held, lock)
		return port, nil
	}
	return 0, errors.New("no free loopback port in 200 tries")
}

// Addr returns "127.0.0.1:PORT" for a port from Get.
func Addr() (string, error) {
	port, err := Get()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// lockDir holds one lock file per port, shared by every test process.
func lockDir() string { return filepath.Join(os.TempDir(), "jarvis-test-ports") }

// reserve takes the lock of port, or returns nil when another process
// holds it.
func reserve(dir string, port int) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("lock port %d: %w", port, err)
	}
	return f, nil
}

// bindable tells whether nothing holds port on 127.0.0.1.
func bindable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralRange is the kernel's range of local ports for outgoing
// connections; Linux's default where it cannot be read.
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	fields := strings.Fields(string(raw))
	if len(fields) != 2 {
		return lo, hi
	}
	a, errA := strconv.Atoi(fields[0])
	b, errB := strconv.Atoi(fields[1])
	if errA != nil || errB != nil || a > b {
		return lo, hi
	}
	return a, b
}
