package sources

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// splitParam splits "<URL> <rest>" at the first space.
func splitParam(param, what string) (string, string, error) {
	raw, rest, _ := strings.Cut(strings.TrimSpace(param), " ")
	rest = strings.TrimSpace(rest)
	if err := checkURL(raw); err != nil {
		return "", "", err
	}
	if rest == "" {
		return "", "", errors.New("give the URL, a space, then the " + what)
	}
	return raw, rest, nil
}

// urlFetchKind reads a JSON value at a URL: the param is the URL, a space,
// and a gjson path ("https://status.example.org/api.json data.gi").
func urlFetchKind(f *fetcher, maxValue int) core.SourceKind {
	parse := func(param string) (string, string, error) {
		raw, path, err := splitParam(param, "JSON path")
		if err != nil {
			return "", "", err
		}
		u, _ := url.Parse(raw)
		return raw, path, f.check(u)
	}
	return core.SourceKind{
		Kind:        "url-fetch",
		Aliases:     []string{"url", "fetch", "url fetch"},
		Description: "a JSON value at a URL of an allowed host",
		Value:       core.ValueNumber,
		Param:       "URL, a space, then a JSON path (e.g. https://status.example.org/api.json data.gi)",
		ParamType:   core.ParamURL,
		Network:     true,
		CheckParam:  func(param string) error { _, _, err := parse(param); return err },
		Resolve: func(ctx context.Context, param string) (core.Observation, error) {
			raw, path, err := parse(param)
			if err != nil {
				return core.Observation{}, err
			}
			// Tripwires reading several paths of one URL fetch it once.
			doc, err := core.Memo(ctx, "sources.url-fetch "+raw, func() ([]byte, error) { return f.get(ctx, raw, "") })
			if err != nil {
				return core.Observation{}, err
			}
			v, err := jsonValue(doc, path, maxValue)
			return core.Observation{Value: v, Context: map[string]any{"url": raw, "path": path}}, err
		},
	}
}
