package app

import (
	"fmt"
	"io"

	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/config"
)

// CheckConfig reads the configuration at configPath as `jarvis run` would,
// without starting anything or writing to the file, and says it is ready;
// what is wrong is ErrConfig, naming each key and where it is set.
func CheckConfig(w io.Writer, configPath string) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return fail(ErrConfig, err)
	}
	fmt.Fprintf(w, "%s is a valid configuration.\n", configPath)
	if cfg.Bot.Encryption.Enabled && cfg.Bot.Encryption.PickleKey == bot.GeneratePickleKey {
		fmt.Fprintln(w, "bot.encryption.pickle_key is `generate`: `jarvis run` writes a fresh key in its place when it first starts.")
	}
	return nil
}

// ConfigExample writes the example configuration, every key with its
// comment and default, which Jarvis carries.
func ConfigExample(w io.Writer) error {
	_, err := w.Write(config.Example)
	return err
}
