// Package sources holds the tripwire source kinds that reach outside
// Jarvis: the configured snapshot endpoint (vault.balance, integrity.gi,
// micro-agent.value and any other kind mapped to a path in it), url-fetch
// (a JSON value at a URL) and rss (the newest feed item matching a keyword).
// Register adds them to core's source registry at start-up.
package sources

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Config is the sources part of the configuration.
type Config struct {
	Snapshot SnapshotConfig
	URLFetch FetchConfig
	RSS      FetchConfig
	// MaxValueBytes bounds a text value any of these kinds reads (a JSON
	// string, a feed item's id and title): a longer one is kept as its
	// first bytes and a digest of the whole, MaxValueBytes in all.
	MaxValueBytes int
}

// SnapshotConfig points the snapshot kinds at a JSON endpoint, fetched at
// most once per evaluator pass however many kinds and tripwires read it.
type SnapshotConfig struct {
	// URL of the snapshot; empty leaves the snapshot kinds out.
	URL string
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token    string
	Timeout  time.Duration
	MaxBytes int64
	// Kinds maps source kinds to paths in the snapshot. It is a list rather
	// than a map because kind names contain dots, which config keys split on.
	Kinds []SnapshotKind
}

// SnapshotKind is a source kind read from the snapshot.
type SnapshotKind struct {
	Kind string
	// Path is a gjson path into the snapshot, e.g. "integrity.gi". A kind
	// whose path holds "{param}" takes a param, put in its place.
	Path        string
	Aliases     []string
	Description string
	// Value is the type of its values: number, ratio (0 to 1), seconds,
	// count, category or text; sentences about the kind are read by it.
	Value core.ValueType
	// Categories are the values of a category kind.
	Categories []string
}

// FetchConfig configures a kind that fetches URLs citizens name.
type FetchConfig struct {
	Enabled bool
	// AllowedHosts are what may be fetched, redirects included:
	// [http://]host[:port], https on port 443 unless the entry says
	// otherwise, "*.example.org" for every subdomain. Only public addresses
	// are connected to, except an address that the URL and an entry both
	// name as such (e.g. "http://127.0.0.1:8080").
	AllowedHosts []string
	Timeout      time.Duration
	MaxBytes     int64
}

// Limits on fetching.
const (
	maxTimeout   = time.Minute
	maxBodyBytes = 16 << 20
)

// Validate checks the config; the error names the key at fault.
func (c Config) Validate() error {
	if c.MaxValueBytes < minValueBytes || c.MaxValueBytes > maxValueBytes {
		return core.Invalid("sources.max_value_bytes", "must be between %d and %d", minValueBytes, maxValueBytes)
	}
	s := c.Snapshot
	if s.URL != "" {
		if err := checkURL(s.URL); err != nil {
			return core.Invalid("sources.snapshot.url", "%v", err)
		}
	}
	if err := checkLimits("sources.snapshot", s.Timeout, s.MaxBytes); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, k := range s.Kinds {
		field := fmt.Sprintf("sources.snapshot.kinds[%d]", i)
		switch {
		case strings.TrimSpace(k.Kind) == "":
			return core.Invalid(field+".kind", "is required")
		case seen[k.Kind]:
			return core.Invalid(field+".kind", "%q is listed twice", k.Kind)
		case strings.TrimSpace(k.Path) == "":
			return core.Invalid(field+".path", "is required")
		case !k.Value.Valid():
			return core.Invalid(field+".value", "must be one of %v, not %q", core.ValueTypes, k.Value)
		case k.Value == core.ValueCategory && len(k.Categories) == 0:
			return core.Invalid(field+".categories", "must list the values of a category kind")
		case k.Value != core.ValueCategory && len(k.Categories) > 0:
			return core.Invalid(field+".categories", "go with value: category only")
		}
		seen[k.Kind] = true
	}
	for _, f := range []struct {
		key string
		cfg FetchConfig
	}{{"sources.url_fetch", c.URLFetch}, {"sources.rss", c.RSS}} {
		if !f.cfg.Enabled {
			continue
		}
		if len(f.cfg.AllowedHosts) == 0 {
			return core.Invalid(f.key+".allowed_hosts", "must list the hosts that may be fetched")
		}
		for i, raw := range f.cfg.AllowedHosts {
			if _, err := parseAllowed(raw); err != nil {
				return core.Invalid(fmt.Sprintf("%s.allowed_hosts[%d]", f.key, i), "%v", err)
			}
		}
		if err := checkLimits(f.key, f.cfg.Timeout, f.cfg.MaxBytes); err != nil {
			return err
		}
	}
	return nil
}

func checkLimits(key string, timeout time.Duration, maxBytes int64) error {
	switch {
	case timeout <= 0 || timeout > maxTimeout:
		return core.Invalid(key+".timeout", "must be between 1ms and %s", maxTimeout)
	case maxBytes <= 0 || maxBytes > maxBodyBytes:
		return core.Invalid(key+".max_bytes", "must be between 1 and %d", maxBodyBytes)
	}
	return nil
}

// checkURL accepts an absolute http or https URL.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an http or https URL")
	case u.Host == "":
		return fmt.Errorf("has no host")
	}
	return nil
}

// Register validates the config and adds the enabled kinds to reg.
func Register(reg *core.SourceRegistry, cfg Config) error {
	return register(reg, cfg, network{})
}

// register is Register with the network the fetchers use.
func register(reg *core.SourceRegistry, cfg Config, nw network) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Snapshot.URL != "" {
		snap := newSnapshot(cfg.Snapshot, cfg.MaxValueBytes, nw)
		for _, k := range cfg.Snapshot.Kinds {
			reg.Register(snap.kind(k))
		}
	}
	if cfg.URLFetch.Enabled {
		reg.Register(urlFetchKind(newFetcher(cfg.URLFetch, nw), cfg.MaxValueBytes))
	}
	if cfg.RSS.Enabled {
		reg.Register(rssKind(newFetcher(cfg.RSS, nw), cfg.MaxValueBytes))
	}
	return nil
}
