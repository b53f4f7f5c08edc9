package testdb

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testport"
	"github.com/jarvis-hmi/jarvis/store"
)

// Server is a PostgreSQL server of one test's own, for tests that crash
// and restart the server under a running Jarvis. The shared server that
// EnvPostgres names serves every test process at once, so no test may
// restart it.
type Server struct {
	// Store is the server's postgres database, on which Jarvis builds its
	// schema at its first start.
	Store store.Config
	bin   string
	dir   string
	port  int
}

// StartServer initialises and starts a PostgreSQL server in a temporary
// directory, on a free loopback port, with the binaries found the way
// .ci/run finds them (PATH, else the newest /usr/lib/postgresql/*/bin); it
// is stopped and removed when tb ends. As root it runs as the postgres
// user, which initdb requires. The error says why there is none, for the
// caller to skip with.
func StartServer(tb testing.TB) (*Server, error) {
	tb.Helper()
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "jarvis-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	if os.Getuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, initdb needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if s.port, err = testport.Get(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	tb.Cleanup(func() {
		_ = s.pgCtl("-m", "immediate", "stop")
		os.RemoveAll(dir)
	})
	if err := s.run(filepath.Join(bin, "initdb"), "-D", s.data(), "-A", "trust", "-U", "postgres"); err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	count(tb)
	s.Store = store.Config{Type: store.Postgres,
		URI: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)}
	return s, nil
}

// Restart stops the server in pg_ctl's shutdown mode, "immediate" as a
// crash would (no checkpoint, every connection cut) or "fast" as an
// operator would (every session ended, a checkpoint), and starts it again
// on the same port.
func (s *Server) Restart(mode string) error {
	if err := s.pgCtl("-m", mode, "stop"); err != nil {
		return err
	}
	return s.start()
}

func (s *Server) start() error {
	// fsync off is safe here: a crash of the server, not of the machine,
	// keeps what was written in the page cache. Commits stay synchronous, or
	// an immediate stop would lose acknowledged transactions.
	opts := fmt.Sprintf("-k %s -h 127.0.0.1 -p %d -c fsync=off", s.dir, s.port)
	return s.pgCtl("-l", filepath.Join(s.dir, "log"), "-w", "-o", opts, "start")
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) pgCtl(args ...string) error {
	return s.run(filepath.Join(s.bin, "pg_ctl"), append([]string{"-D", s.data()}, args...)...)
}

// run runs a server binary, as the postgres user when this is root.
func (s *Server) run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if os.Getuid() == 0 {
		quoted := make([]string, 0, len(args)+1)
		for _, a := range append([]string{name}, args...) {
			quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
		cmd = exec.Command("su", "postgres", "-s", "/bin/sh", "-c", strings.Join(quoted, " "))
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	return nil
}

// postgresBin is the directory of initdb and pg_ctl.
func postgresBin() (string, error) {
	if path, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(path), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
	if len(dirs) == 0 {
		return "", fmt.Errorf("no PostgreSQL server binaries: initdb is not on PATH and no /usr/lib/postgresql/*/bin")
	}
	return dirs[len(dirs)-1], nil
}

// version is the major version in a /usr/lib/postgresql/N/bin path.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}
