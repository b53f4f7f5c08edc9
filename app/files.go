package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/jarvis-hmi/jarvis/store"
)

// checkPrivate refuses a configuration file or a SQLite database (with its
// write-ahead log and shared-memory index) that its group or others may
// read or write: the configuration holds the homeserver's password and the
// pickle key, the database Jarvis's access token, its crypto keys and
// people's notes. The refusal names the file and the chmod that fixes it.
func checkPrivate(configPath string, st store.Config) error {
	var open, modes []string
	for _, path := range append([]string{configPath}, st.Files()...) {
		if path == "" {
			continue
		}
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail(ErrFileMode, err)
		}
		if mode := fi.Mode().Perm(); mode&0o077 != 0 {
			open = append(open, path)
			modes = append(modes, fmt.Sprintf("%s is %#o", path, mode))
		}
	}
	if len(open) == 0 {
		return nil
	}
	return fail(ErrFileMode, fmt.Errorf("%s: readable or writable by others, and it holds secrets; run `chmod 600 %s`",
		strings.Join(modes, ", "), strings.Join(open, " ")))
}
