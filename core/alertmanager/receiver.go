// Package alertmanager takes Prometheus Alertmanager's notifications
// (its webhook format, version 4) into the room: each alert group is one
// incident of the on-call service, posted once, edited as the group gains
// or loses alerts, and resolved with the all-clear when Alertmanager says
// it resolved.
package alertmanager

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// Kind is the kind of the incidents alert groups are.
const Kind = "alertmanager"

// Version is the webhook format taken.
const Version = "4"

// The urgencies a severity maps to.
const (
	// Page mentions the admins in the alert.
	Page = "page"
	// Notify posts the alert without mentioning anyone.
	Notify = "notify"
)

// Config is the alertmanager section.
type Config struct {
	// MaxBodyBytes bounds a notification's body.
	MaxBodyBytes int64
	// LinkHosts are the hosts whose runbook_url and generatorURL become
	// links; any other is shown as text.
	LinkHosts []string
	// Urgency maps an alert group's severity label to its urgency; a
	// severity not named is DefaultUrgency.
	Urgency        map[string]string
	DefaultUrgency string
	// MaxAlerts is how many of a group's firing alerts its message lists;
	// it counts the rest.
	MaxAlerts int
	// MaxText bounds each label and annotation shown, in characters.
	MaxText int
}

// Validate checks the section.
func (c Config) Validate() error {
	switch {
	case c.MaxBodyBytes < 1024 || c.MaxBodyBytes > 16<<20:
		return core.Invalid("alertmanager.max_body_bytes", "must be between 1024 and 16777216, got %d", c.MaxBodyBytes)
	case c.MaxAlerts < 1 || c.MaxAlerts > 100:
		return core.Invalid("alertmanager.max_alerts", "must be between 1 and 100, got %d", c.MaxAlerts)
	case c.MaxText < 10 || c.MaxText > 2000:
		return core.Invalid("alertmanager.max_text", "must be between 10 and 2000, got %d", c.MaxText)
	case !validUrgency(c.DefaultUrgency):
		return core.Invalid("alertmanager.default_urgency", "must be %s or %s, got %q", Page, Notify, c.DefaultUrgency)
	}
	for sev, u := range c.Urgency {
		if !validUrgency(u) {
			return core.Invalid("alertmanager.urgency", "severity %q: must be %s or %s, got %q", sev, Page, Notify, u)
		}
	}
	for _, h := range c.LinkHosts {
		if h == "" || strings.ContainsAny(h, "/:@ ") {
			return core.Invalid("alertmanager.link_hosts", "must be host names such as grafana.example.org, got %q", h)
		}
	}
	return nil
}

func validUrgency(u string) bool { return u == Page || u == Notify }

// Notification is what Alertmanager posts for one alert group.
type Notification struct {
	Version           string
	GroupKey          string
	TruncatedAlerts   int
	Status            string
	Receiver          string
	GroupLabels       map[string]string
	CommonLabels      map[string]string
	CommonAnnotations map[string]string
	ExternalURL       string
	Alerts            []Alert
}

// Alert is one alert of a group.
type Alert struct {
	Status       string
	Labels       map[string]string
	Annotations  map[string]string
	StartsAt     time.Time
	EndsAt       time.Time
	GeneratorURL string
	Fingerprint  string
}

// The statuses of a group and of an alert.
const (
	Firing   = "firing"
	Resolved = "resolved"
)

// Deps are what the receiver needs.
type Deps struct {
	Oncall *oncall.Service
	Tx     core.Transactor
	Clock  core.Clock
	// RoomID is the room alerts are posted in, Admins whom a page
	// mentions.
	RoomID string
	Admins []string
}

// Service takes notifications.
type Service struct {
	cfg  Config
	deps Deps
}

// NewService builds the receiver.
func NewService(cfg Config, deps Deps) *Service { return &Service{cfg: cfg, deps: deps} }

// MaxBodyBytes is the largest notification body taken.
func (s *Service) MaxBodyBytes() int64 { return s.cfg.MaxBodyBytes }

// Check refuses a notification that is not of the format taken.
func Check(n Notification) error {
	switch {
	case n.Version != Version:
		return core.Invalid("version", "must be %q (Alertmanager's webhook format), got %q", Version, n.Version)
	case strings.TrimSpace(n.GroupKey) == "":
		return core.Invalid("groupKey", "is empty")
	case n.Status != Firing && n.Status != Resolved:
		return core.Invalid("status", "must be %s or %s, got %q", Firing, Resolved, n.Status)
	}
	return nil
}

// Receive takes one notification in a transaction of its own: a group
// firing for the first time is posted; a group already posted is edited
// to what it says now (the same notification again changes nothing); a
// group resolved is resolved with the all-clear. A group Jarvis never
// posted that is resolved is not told.
func (s *Service) Receive(ctx context.Context, n Notification) error {
	if err := Check(n); err != nil {
		return err
	}
	subject := Subject(n.GroupKey)
	return s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		id, open, err := s.deps.Oncall.OpenIncident(ctx, Kind, subject)
		switch {
		case err != nil:
			return err
		case !open && n.Status == Resolved:
			return nil
		case !open:
			id = fmt.Sprintf("%s:%d", subject, s.deps.Clock.Now().UnixMilli())
			note := core.Notice{Key: id, RoomID: s.deps.RoomID, Kind: core.NoticeMessage, Body: s.render(n)}
			if s.urgency(n) == Page {
				note.Mentions = s.deps.Admins
			}
			return s.deps.Oncall.RaiseNamed(ctx, id, Kind, subject, Matchers(n.CommonLabels), note)
		case n.Status == Resolved:
			return s.deps.Oncall.Resolve(ctx, id, "Alertmanager says "+core.EscapeMarkdown(s.name(n))+" resolved.")
		default:
			return s.deps.Oncall.Edit(ctx, id, s.render(n))
		}
	})
}

// Subject is what the incidents of the group with groupKey are about:
// the key's digest, as the key may be long.
func Subject(groupKey string) string {
	sum := sha256.Sum256([]byte(groupKey))
	return Kind + ":" + hex.EncodeToString(sum[:8])
}

// Matchers are the names a silence holds a group by: each label every
// alert of the group has, as name=value ("alertname=DiskFull").
func Matchers(common map[string]string) []string {
	out := make([]string, 0, len(common))
	for k, v := range common {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// urgency is the group's urgency, from its severity label.
func (s *Service) urgency(n Notification) string {
	if u, ok := s.cfg.Urgency[strings.ToLower(n.CommonLabels["severity"])]; ok {
		return u
	}
	return s.cfg.DefaultUrgency
}

// name is what the group is called: its alertname, else its group labels.
func (s *Service) name(n Notification) string {
	if a := n.CommonLabels["alertname"]; a != "" {
		return core.Truncate(a, s.cfg.MaxText)
	}
	return core.Truncate(labelText(n.GroupLabels), s.cfg.MaxText)
}

// render is the group's message: what it is, how urgent, and each firing
// alert with its labels (those the group does not share), summary and
// links. Everything Alertmanager says is untrusted text: escaped, capped.
func (s *Service) render(n Notification) string {
	var firing []Alert
	resolved := 0
	for _, a := range n.Alerts {
		if a.Status == Resolved {
			resolved++
		} else {
			firing = append(firing, a)
		}
	}
	sort.Slice(firing, func(i, j int) bool {
		return labelText(firing[i].Labels) < labelText(firing[j].Labels)
	})
	icon := "🔔"
	if s.urgency(n) == Page {
		icon = "🚨"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s **Alertmanager: %s** — %s firing", icon, core.EscapeMarkdown(s.name(n)), core.Plural(len(firing)+n.TruncatedAlerts, "alert", "alerts"))
	if resolved > 0 {
		fmt.Fprintf(&b, ", %d resolved", resolved)
	}
	if sev := n.CommonLabels["severity"]; sev != "" {
		fmt.Fprintf(&b, " (severity %s)", core.EscapeMarkdown(core.Truncate(sev, s.cfg.MaxText)))
	}
	if sum := n.CommonAnnotations["summary"]; sum != "" {
		fmt.Fprintf(&b, "\n\n%s", core.EscapeMarkdown(core.Truncate(sum, s.cfg.MaxText)))
	}
	b.WriteString("\n")
	for i, a := range firing {
		if i == s.cfg.MaxAlerts {
			fmt.Fprintf(&b, "\n- and %d more", len(firing)-i)
			break
		}
		b.WriteString("\n- " + s.alertLine(a, n.CommonLabels, n.CommonAnnotations))
	}
	if n.TruncatedAlerts > 0 {
		fmt.Fprintf(&b, "\n- and %d that Alertmanager left out", n.TruncatedAlerts)
	}
	return b.String()
}

// alertLine is one firing alert: its own labels, its summary when the
// group's is not it, and its links.
func (s *Service) alertLine(a Alert, common, commonAnn map[string]string) string {
	own := map[string]string{}
	for k, v := range a.Labels {
		if common[k] != v {
			own[k] = v
		}
	}
	parts := []string{}
	if len(own) > 0 {
		parts = append(parts, core.EscapeMarkdown(core.Truncate(labelText(own), s.cfg.MaxText)))
	} else {
		parts = append(parts, core.EscapeMarkdown(core.Truncate(labelText(a.Labels), s.cfg.MaxText)))
	}
	if sum := a.Annotations["summary"]; sum != "" && sum != commonAnn["summary"] {
		parts = append(parts, core.EscapeMarkdown(core.Truncate(sum, s.cfg.MaxText)))
	}
	for _, l := range []struct{ name, url string }{{"runbook", a.Annotations["runbook_url"]}, {"source", a.GeneratorURL}} {
		if link, ok := s.link(l.url); ok {
			parts = append(parts, "["+l.name+"]("+link+")")
		}
	}
	return strings.Join(parts, " — ")
}

// link returns raw as a link's destination when it is an http(s) URL on
// one of the configured hosts.
func (s *Service) link(raw string) (string, bool) {
	if raw == "" || len(raw) > 2000 {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil ||
		!slices.ContainsFunc(s.cfg.LinkHosts, func(h string) bool { return strings.EqualFold(h, u.Hostname()) }) {
		return "", false
	}
	return linkEscaper.Replace(u.String()), true
}

// linkEscaper percent-encodes what would end a Markdown link's
// destination or open markup inside it.
var linkEscaper = strings.NewReplacer("(", "%28", ")", "%29", " ", "%20", "<", "%3C", ">", "%3E", "[", "%5B", "]", "%5D", "\\", "%5C", "`", "%60", "\"", "%22", "'", "%27", "*", "%2A", "_", "%5F")

// labelText is labels as name="value", sorted by name.
func labelText(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s=%q", k, labels[k])
	}
	return strings.Join(parts, " ")
}
