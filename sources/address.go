package sources

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// allowEntry is one entry of an allowlist: [http://|https://]host[:port].
// The scheme is https unless the entry says http://, and the port is the
// scheme's (443, or 80 for http://) unless it names one; host may be
// "*.example.org" for every subdomain, or an IP address: a URL naming that
// address (and port) may connect to it even when it is not public, while
// a name resolving to it may not.
type allowEntry struct {
	scheme string
	host   string // lower case, without a trailing dot
	port   string
	ip     netip.Addr // valid when host is an IP address
}

// parseAllowed reads an allowlist entry.
func parseAllowed(raw string) (allowEntry, error) {
	e := allowEntry{scheme: "https"}
	rest := strings.ToLower(strings.TrimSpace(raw))
	if scheme, after, ok := strings.Cut(rest, "://"); ok {
		if scheme != "http" && scheme != "https" {
			return e, fmt.Errorf("%q: the scheme must be http:// or https://", raw)
		}
		e.scheme, rest = scheme, after
	}
	if rest == "" || strings.ContainsAny(rest, "/?#@ \t") {
		return e, fmt.Errorf("%q: want a host, with :port or without, and nothing else", raw)
	}
	e.host, e.port = rest, ""
	if host, port, err := net.SplitHostPort(rest); err == nil {
		e.host, e.port = host, port
	} else if strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") {
		e.host = rest[1 : len(rest)-1]
	}
	e.host = strings.TrimSuffix(e.host, ".")
	if e.port == "" {
		e.port = defaultPort[e.scheme]
	} else if n, err := strconv.Atoi(e.port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != e.port {
		return e, fmt.Errorf("%q: the port must be a number from 1 to 65535", raw)
	}
	if ip, err := netip.ParseAddr(e.host); err == nil {
		e.ip, e.host = ip.Unmap(), ip.Unmap().String()
		return e, nil
	}
	name := strings.TrimPrefix(e.host, "*.")
	if name == "" || strings.ContainsAny(name, "*:[]") || strings.Contains(name, "..") {
		return e, fmt.Errorf("%q: want a host name, *.domain or an IP address", raw)
	}
	return e, nil
}

// matchesHost says whether the entry names host (lower case, without a
// trailing dot): the same name or address, or a subdomain of a wildcard.
func (e allowEntry) matchesHost(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return e.ip.IsValid() && e.ip == ip.Unmap()
	}
	if suffix, ok := strings.CutPrefix(e.host, "*"); ok {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return e.host == host
}

// String writes the entry back in full.
func (e allowEntry) String() string {
	return e.scheme + "://" + net.JoinHostPort(e.host, e.port)
}

// specialRanges are the ranges that are not the public Internet beyond
// what netip's predicates name: shared address space (carrier-grade NAT),
// IETF protocol assignments, documentation and benchmarking networks, the
// reserved class E, IPv4-compatible IPv6, discard-only, Teredo,
// local-use NAT64 and site-local IPv6.
var specialRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("fec0::/10"),
}

// Prefixes of IPv6 addresses that carry an IPv4 address, which must be
// public too: NAT64 (in the last 32 bits) and 6to4 (in bits 16 to 48).
var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToV4 = netip.MustParsePrefix("2002::/16")
)

// publicAddress says whether ip is a public unicast address: not loopback,
// private, link-local (169.254.169.254, where clouds serve instance
// metadata, among them), multicast, unspecified, broadcast or one of the
// special ranges; an IPv4 address inside IPv6 is judged as IPv4.
func publicAddress(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.Zone() != "" {
		return false
	}
	for _, p := range specialRanges {
		if p.Contains(ip) {
			return false
		}
	}
	b := ip.As16()
	switch {
	case ip.Is6() && nat64.Contains(ip):
		return publicAddress(netip.AddrFrom4([4]byte(b[12:16])))
	case ip.Is6() && sixToV4.Contains(ip):
		return publicAddress(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return true
}
