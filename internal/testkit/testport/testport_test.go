package testport

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestGetHandsOutDistinctBindablePortsOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := ephemeralRange()
	seen := map[int]bool{}
	for range 50 {
		port, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if port >= lo && port <= hi {
			t.Fatalf("port %d lies in the ephemeral range %d-%d", port, lo, hi)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d cannot be bound: %v", port, err)
		}
		l.Close()
	}
}

// A port this process reserved is refused to another process (flock(1)
// here), which is what keeps test binaries that run side by side apart.
func TestAReservedPortIsRefusedToAnotherProcess(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) is not installed")
	}
	port, err := Get()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(lockDir(), strconv.Itoa(port))
	if err := exec.Command(flock, "--nonblock", path, "true").Run(); err == nil {
		t.Fatalf("another process took the lock of reserved port %d", port)
	}
}
