package sources

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/jarvis-hmi/jarvis/core"
)

// rssKind watches a feed for items matching a keyword: the param is the
// feed URL, a space, and the keyword. Its value is the id of the newest
// matching item ("" while none matches), so a changed condition fires when
// a new matching item appears, and not on those already there when armed.
func rssKind(f *fetcher, maxValue int) core.SourceKind {
	parse := func(param string) (string, string, error) {
		raw, keyword, err := splitParam(param, "keyword")
		if err != nil {
			return "", "", err
		}
		u, _ := url.Parse(raw)
		return raw, keyword, f.check(u)
	}
	return core.SourceKind{
		Kind:        "rss",
		Aliases:     []string{"feed", "rss feed", "news"},
		Description: "the newest item of an RSS or Atom feed matching a keyword; use with changed",
		Value:       core.ValueText,
		Param:       "feed URL, a space, then a keyword (e.g. https://blog.example.org/feed.xml outage)",
		ParamType:   core.ParamURL,
		Network:     true,
		CheckParam:  func(param string) error { _, _, err := parse(param); return err },
		Resolve: func(ctx context.Context, param string) (core.Observation, error) {
			raw, keyword, err := parse(param)
			if err != nil {
				return core.Observation{}, err
			}
			// Tripwires watching one feed for different keywords fetch it once.
			feed, err := core.Memo(ctx, "sources.rss "+raw, func() (*gofeed.Feed, error) {
				body, err := f.get(ctx, raw, "")
				if err != nil {
					return nil, err
				}
				feed, err := gofeed.NewParser().Parse(bytes.NewReader(body))
				if err != nil {
					return nil, unavailable(ctx, reasonResponse, fmt.Errorf("%s is not a feed: %w", raw, err))
				}
				return feed, nil
			})
			if err != nil {
				return core.Observation{}, err
			}
			item := newestMatch(feed, keyword)
			if item == nil {
				return core.Observation{Value: "", Display: capText("no item about "+keyword, maxValue)}, nil
			}
			title := capText(item.Title, maxValue-len("“”"))
			return core.Observation{
				Value:   capText(itemID(item), maxValue),
				Display: "“" + title + "”",
				Context: map[string]any{"title": title, "link": capText(item.Link, maxValue), "feed": raw, "keyword": keyword},
			}, nil
		},
	}
}

// newestMatch returns the newest item whose title or description holds the
// keyword (ignoring case); items without dates count in feed order.
func newestMatch(feed *gofeed.Feed, keyword string) *gofeed.Item {
	keyword = strings.ToLower(keyword)
	var best *gofeed.Item
	var bestAt time.Time
	for _, item := range feed.Items {
		if !strings.Contains(strings.ToLower(item.Title+" "+item.Description), keyword) {
			continue
		}
		at := itemTime(item)
		if best == nil || at.After(bestAt) {
			best, bestAt = item, at
		}
	}
	return best
}

func itemTime(item *gofeed.Item) time.Time {
	switch {
	case item.PublishedParsed != nil:
		return *item.PublishedParsed
	case item.UpdatedParsed != nil:
		return *item.UpdatedParsed
	}
	return time.Time{}
}

func itemID(item *gofeed.Item) string {
	switch {
	case item.GUID != "":
		return item.GUID
	case item.Link != "":
		return item.Link
	}
	return item.Title
}
