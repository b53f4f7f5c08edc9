package app

import "errors"

// Kinds of failure. cmd/jarvis ends the process with a distinct exit code
// for each (the code is named beside it), so that a supervisor, a script
// and a person reading `systemctl status` can tell them apart. An error
// the app returns is of at most one kind (see Kind), and keeps its own
// message.
var (
	// ErrFailed is anything else that went wrong (exit code 1).
	ErrFailed = errors.New("failed")
	// ErrRefused is Jarvis refusing what `jarvis console -c` asked: an
	// unknown command, one not allowed, bad arguments (exit code 1).
	ErrRefused = errors.New("refused")
	// ErrConfig is a configuration that does not load, or a value in it
	// that Jarvis, the homeserver or the stored keys refuse, such as a
	// pickle key that does not decrypt the keys (exit code 2).
	ErrConfig = errors.New("configuration refused")
	// ErrFileMode is a configuration file or a SQLite database that
	// someone other than Jarvis's user may read or write; the error names
	// the chmod that fixes it (exit code 6).
	ErrFileMode = errors.New("file open to others")
	// ErrConsole is `jarvis console -c` failing on Jarvis's side, no
	// Jarvis acting on it in time, or the console not starting (exit
	// code 2).
	ErrConsole = errors.New("console failed")
	// ErrStore is a database that cannot be opened, upgraded or read
	// (exit code 3).
	ErrStore = errors.New("store failed")
	// ErrMatrix is a homeserver that cannot be reached or refuses Jarvis
	// (exit code 4).
	ErrMatrix = errors.New("matrix failed")
	// ErrAPI is the HTTP API failing to serve (exit code 5).
	ErrAPI = errors.New("api failed")
	// ErrBreakerOpen is `circuit-breaker status` finding the agent halted:
	// scripts and scheduled turns must not run it (exit code 10).
	ErrBreakerOpen = errors.New("circuit breaker open")
	// ErrLeaseHeld is `circuit-breaker reset` refused because a running
	// Jarvis holds the workspace lease and must make the change itself
	// (exit code 11).
	ErrLeaseHeld = errors.New("workspace lease held")
	// ErrTargetNotEmpty is `migrate` refusing a target that holds data
	// (exit code 12).
	ErrTargetNotEmpty = errors.New("migration target not empty")
	// ErrBackupExists is `backup` refusing to replace an existing file
	// (exit code 13).
	ErrBackupExists = errors.New("backup file exists")
	// ErrUsage is a command asked for something it cannot do: a bad flag
	// value, an argument it refuses (exit code 64, as for the errors of
	// flag parsing, which are of no kind).
	ErrUsage = errors.New("usage")
)

// Kind is the kind of failure err is (the outermost, when one was
// classified again): one of the Err values above, or nil for an error of
// no kind, such as a flag parser's.
func Kind(err error) error {
	var f *failure
	if errors.As(err, &f) {
		return f.kind
	}
	return nil
}

// failure is an error classified as one kind of failure; its message is
// the error's own.
type failure struct {
	kind error
	err  error
}

func (f *failure) Error() string   { return f.err.Error() }
func (f *failure) Unwrap() []error { return []error{f.err, f.kind} }

// fail classifies err as kind.
func fail(kind, err error) error { return &failure{kind: kind, err: err} }
