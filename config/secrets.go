package config

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/core"
)

// generatedSecrets are the keys whose value `generate`
// (bot.GeneratePickleKey) asks Jarvis for a fresh random secret, written
// back to the file on its next start.
var generatedSecrets = []string{"bot.encryption.pickle_key"}

// GenerateSecrets writes a fresh random secret (256 bits, base64) in place
// of every `generate` in the file at path, keeping everything else in it,
// comments included, and says which keys it wrote. A `generate` that comes
// from the environment cannot be written back and is an error naming the
// variable.
func GenerateSecrets(path string) ([]string, error) {
	f, err := readFile(path)
	if err != nil {
		return nil, err
	}
	data := f.data
	var written []string
	for _, key := range generatedSecrets {
		if value, ok := os.LookupEnv(envVar(key)); ok {
			if value == bot.GeneratePickleKey {
				return nil, fmt.Errorf("%s: %w", envVar(key), core.Invalid(key, "is %q, which Jarvis cannot write back to the environment: "+
					"write `generate` in the file instead, or a secret of your own", value))
			}
			continue
		}
		n, _ := f.lookup(key)
		if n == nil || n.Kind != yaml.ScalarNode || n.Value != bot.GeneratePickleKey {
			continue
		}
		start, ok := offset(data, n.Line, n.Column)
		end := start + len(n.Value)
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			end += 2
		}
		if !ok || end > len(data) {
			return nil, fmt.Errorf("%s:%d: %s: cannot find its value to replace", path, n.Line, key)
		}
		secret := make([]byte, 32)
		rand.Read(secret)
		data = append(data[:start:start], append([]byte(strconv.Quote(base64.RawStdEncoding.EncodeToString(secret))), data[end:]...)...)
		written = append(written, key)
	}
	if len(written) == 0 {
		return nil, nil
	}
	if err := replaceFile(path, data); err != nil {
		return nil, fmt.Errorf("write the generated %s to %s (or set it yourself: 32 random bytes, base64): %w", written[0], path, err)
	}
	return written, nil
}

// offset is the byte offset of line and column (both from 1, the column in
// characters) in data.
func offset(data []byte, line, column int) (int, bool) {
	i := 0
	for l := 1; l < line; l++ {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			return 0, false
		}
		i += j + 1
	}
	for c := 1; c < column; c++ {
		if i >= len(data) || data[i] == '\n' {
			return 0, false
		}
		_, size := utf8.DecodeRune(data[i:])
		i += size
	}
	return i, true
}

// replaceFile writes data to path in one step (a new file renamed over
// it), with the old file's permissions.
func replaceFile(path string, data []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
