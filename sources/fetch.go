package sources

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/tidwall/gjson"

	"github.com/jarvis-hmi/jarvis/core"
)

// fetcher GETs URLs within a time and size limit. With an allowlist (the
// url-fetch and rss kinds, whose URLs citizens write) it fetches only the
// hosts, schemes and ports the list names, redirects included, and
// connects only to public addresses or to one an entry names; the address
// is checked as the socket connects to it, so a name that resolves
// elsewhere the second time (DNS rebinding) cannot point it inside.
type fetcher struct {
	client   *http.Client
	allowed  []allowEntry // empty: any host and address (the configured snapshot URL)
	maxBytes int64
}

// network is how fetchers reach the network: how they look names up and
// which TLS roots they trust. The zero value is the system's.
type network struct {
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	roots  *x509.CertPool
}

// Why a fetch failed, as the tripwire's owner is told (core.SourceUnavailable).
const (
	reasonAddress  = "address not allowed"
	reasonRedirect = "redirect not allowed"
	reasonTimeout  = "timed out"
	reasonNetwork  = "unreachable"
	reasonResponse = "bad response"
	reasonTooLarge = "response too large"
)

var (
	errAddressNotAllowed  = errors.New("address not allowed")
	errRedirectNotAllowed = errors.New("redirect not allowed")
)

const maxRedirects = 5

// defaultPort is the port of a URL or an allowlist entry that names none.
var defaultPort = map[string]string{"https": "443", "http": "80"}

func newFetcher(cfg FetchConfig, nw network) *fetcher {
	f := &fetcher{maxBytes: cfg.MaxBytes}
	for _, raw := range cfg.AllowedHosts {
		e, err := parseAllowed(raw)
		if err != nil {
			panic(err) // Validate refused it before
		}
		f.allowed = append(f.allowed, e)
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: nw.roots},
		TLSHandshakeTimeout: cfg.Timeout,
		MaxIdleConns:        16,
		IdleConnTimeout:     cfg.Timeout,
		ForceAttemptHTTP2:   true,
	}
	if len(f.allowed) > 0 {
		// No proxy: the address checked must be the one connected to.
		transport.Proxy = nil
		lookup := nw.lookup
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return f.dial(ctx, dialer, lookup, network, addr)
		}
	}
	f.client = &http.Client{Timeout: cfg.Timeout, Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return errors.New("too many redirects")
			}
			if req.URL.Scheme == "http" && via[len(via)-1].URL.Scheme == "https" {
				return fmt.Errorf("%w: from https to http", errRedirectNotAllowed)
			}
			if err := f.check(req.URL); err != nil {
				return fmt.Errorf("%w: %w", errRedirectNotAllowed, err)
			}
			return nil
		}}
	return f
}

// dial connects to addr, the host:port of the URL. It looks host up and
// dials its addresses in turn, as addresses, with a Control that sees the
// address the socket connects to and refuses one that is not public
// (loopback, private, link-local such as the cloud metadata address
// 169.254.169.254, multicast, unspecified and the other special ranges,
// IPv4-mapped IPv6 included). The one exception is a URL whose host is
// itself an address that an allowlist entry names with this port.
func (f *fetcher) dial(ctx context.Context, base *net.Dialer, lookup func(context.Context, string) ([]netip.Addr, error),
	network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	var named netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
		for _, e := range f.allowed {
			if e.ip.IsValid() && e.ip == ip.Unmap() && e.port == port {
				named = e.ip
			}
		}
	} else if ips, err = lookup(ctx, host); err != nil {
		return nil, err
	}
	dialer := *base
	dialer.Control = func(_, address string, _ syscall.RawConn) error { return checkAddress(address, named) }
	errs := []error{fmt.Errorf("%s has no address", host)}
	for _, ip := range ips {
		conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	if len(errs) > 1 {
		errs = errs[1:]
	}
	return nil, errors.Join(errs...)
}

// checkAddress refuses a connection to an address that is neither public
// nor the named one.
func checkAddress(address string, named netip.Addr) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", errAddressNotAllowed, address)
	}
	if ip := ap.Addr().Unmap(); publicAddress(ip) || (named.IsValid() && ip == named) {
		return nil
	}
	return fmt.Errorf("%w: %s is not a public address", errAddressNotAllowed, address)
}

// check refuses a URL that is not http(s), or that no allowlist entry
// names with its scheme and port.
func (f *fetcher) check(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s is not an http or https URL", u.Redacted())
	}
	if len(f.allowed) == 0 {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		port = defaultPort[u.Scheme]
	}
	var named []string
	for _, e := range f.allowed {
		if !e.matchesHost(host) {
			continue
		}
		if e.scheme == u.Scheme && e.port == port {
			return nil
		}
		named = append(named, e.String())
	}
	if len(named) == 0 {
		return fmt.Errorf("host %s is not in the allowed hosts", u.Host)
	}
	return fmt.Errorf("%s://%s is not in the allowed hosts, which have %s only as %s",
		u.Scheme, net.JoinHostPort(host, port), host, strings.Join(named, ", "))
}

// get fetches a URL and returns its body. Its errors are
// core.SourceUnavailable, whose text is the reason alone; the detail goes
// to the log of ctx.
func (f *fetcher) get(ctx context.Context, raw, token string) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("bad URL: %v", err)
	}
	if err := f.check(u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "Jarvis tripwires")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		// The client's error names the URL it asked (a redirect's target
		// too), query string and all.
		var ue *url.Error
		if errors.As(err, &ue) {
			asked, perr := url.Parse(ue.URL)
			if perr != nil {
				asked = u
			}
			ue.URL = logged(asked)
		}
		return nil, unavailable(ctx, reasonOf(err), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, unavailable(ctx, reasonResponse, fmt.Errorf("%s answered %s", logged(u), resp.Status))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return nil, unavailable(ctx, reasonOf(err), fmt.Errorf("read %s: %w", logged(u), err))
	}
	if int64(len(body)) > f.maxBytes {
		return nil, unavailable(ctx, reasonTooLarge, fmt.Errorf("%s answered more than %d bytes", logged(u), f.maxBytes))
	}
	return body, nil
}

// logged is u as the log names it: without its userinfo, query string and
// fragment, where a source's URL carries its secrets (`?api_key=…`).
func logged(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// unavailable logs why a source could not be read and returns the error
// its owner may see.
func unavailable(ctx context.Context, reason string, detail error) error {
	zerolog.Ctx(ctx).Warn().Err(detail).Str("reason", reason).Msg("Failed to read a tripwire source")
	return &core.SourceUnavailable{Reason: reason, Detail: detail}
}

// reasonOf classifies a failed request.
func reasonOf(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, errAddressNotAllowed):
		return reasonAddress
	case errors.Is(err, errRedirectNotAllowed):
		return reasonRedirect
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return reasonTimeout
	}
	return reasonNetwork
}

// jsonValue reads a scalar at a gjson path of a JSON document; a string
// longer than maxValue bytes is capped (capText).
func jsonValue(doc []byte, path string, maxValue int) (any, error) {
	if !gjson.ValidBytes(doc) {
		return nil, errors.New("the answer is not JSON")
	}
	r := gjson.GetBytes(doc, path)
	switch r.Type {
	case gjson.Number:
		return r.Float(), nil
	case gjson.String:
		return capText(r.Str, maxValue), nil
	case gjson.True, gjson.False:
		return r.Bool(), nil
	case gjson.Null:
		if !r.Exists() {
			return nil, fmt.Errorf("nothing at %s", path)
		}
		return nil, fmt.Errorf("%s is null", path)
	}
	return nil, fmt.Errorf("%s is an object or a list, not a value", path)
}
