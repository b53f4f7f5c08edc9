package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
)

// fetcher GETs URLs within a time and size limit; with an allowlist it
// refuses other hosts, redirects included.
type fetcher struct {
	client   *http.Client
	allowed  []string // empty: any host (the configured snapshot URL)
	maxBytes int64
}

const maxRedirects = 5

func newFetcher(cfg FetchConfig) *fetcher {
	f := &fetcher{allowed: cfg.AllowedHosts, maxBytes: cfg.MaxBytes}
	f.client = &http.Client{Timeout: cfg.Timeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return errors.New("too many redirects")
		}
		return f.check(req.URL)
	}}
	return f
}

// check refuses a URL that is not http(s) or whose host is not allowed.
func (f *fetcher) check(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s is not an http or https URL", u.Redacted())
	}
	if len(f.allowed) == 0 {
		return nil
	}
	host, hostport := strings.ToLower(u.Hostname()), strings.ToLower(u.Host)
	for _, a := range f.allowed {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == host || a == hostport || (strings.HasPrefix(a, "*.") && strings.HasSuffix(host, a[1:])) {
			return nil
		}
	}
	return fmt.Errorf("host %s is not in the allowed hosts", u.Host)
}

// get fetches a URL and returns its body.
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
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s answered %s", u.Host, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", u.Host, err)
	}
	if int64(len(body)) > f.maxBytes {
		return nil, fmt.Errorf("%s answered more than %d bytes", u.Host, f.maxBytes)
	}
	return body, nil
}

// jsonValue reads a scalar at a gjson path of a JSON document.
func jsonValue(doc []byte, path string) (any, error) {
	if !gjson.ValidBytes(doc) {
		return nil, errors.New("the answer is not JSON")
	}
	r := gjson.GetBytes(doc, path)
	switch r.Type {
	case gjson.Number:
		return r.Float(), nil
	case gjson.String:
		return r.Str, nil
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
