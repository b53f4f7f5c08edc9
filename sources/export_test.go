package sources

import (
	"context"
	"crypto/x509"
	"net/netip"

	"github.com/jarvis-hmi/jarvis/core"
)

// RegisterWith is Register with the fetchers looking names up with lookup
// (nil: the system's resolver) and trusting roots (nil: the system's).
func RegisterWith(reg *core.SourceRegistry, cfg Config, lookup func(ctx context.Context, host string) ([]netip.Addr, error), roots *x509.CertPool) error {
	return register(reg, cfg, network{lookup: lookup, roots: roots})
}

// PublicAddress exposes publicAddress.
var PublicAddress = publicAddress
