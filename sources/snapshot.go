package sources

import (
	"context"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/jarvis-hmi/jarvis/core"
)

// snapshot reads kinds from the configured snapshot endpoint.
type snapshot struct {
	url, token string
	fetch      *fetcher
	maxValue   int
}

func newSnapshot(cfg SnapshotConfig, maxValue int, nw network) *snapshot {
	return &snapshot{url: cfg.URL, token: cfg.Token, maxValue: maxValue,
		fetch: newFetcher(FetchConfig{Timeout: cfg.Timeout, MaxBytes: cfg.MaxBytes}, nw)}
}

// body fetches the snapshot once per evaluator pass.
func (s *snapshot) body(ctx context.Context) ([]byte, error) {
	return core.Memo(ctx, "sources.snapshot "+s.url, func() ([]byte, error) { return s.fetch.get(ctx, s.url, s.token) })
}

// kind is the source kind reading one path of the snapshot.
func (s *snapshot) kind(k SnapshotKind) core.SourceKind {
	desc := k.Description
	if desc == "" {
		desc = k.Path + " in the snapshot"
	}
	sk := core.SourceKind{Kind: k.Kind, Network: true, Aliases: k.Aliases, Description: desc, Value: k.Value, Categories: k.Categories}
	if strings.Contains(k.Path, "{param}") {
		sk.Param, sk.ParamType = "which one (the {param} of "+k.Path+")", core.ParamName
	}
	sk.Resolve = func(ctx context.Context, param string) (core.Observation, error) {
		doc, err := s.body(ctx)
		if err != nil {
			return core.Observation{}, err
		}
		v, err := jsonValue(doc, strings.ReplaceAll(k.Path, "{param}", gjson.Escape(param)), s.maxValue)
		return core.Observation{Value: v}, err
	}
	return sk
}
