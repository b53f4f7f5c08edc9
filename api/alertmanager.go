package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/alertmanager"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// RegisterAlertmanager adds Alertmanager's receiver: a webhook receiver
// whose http_config.authorization credentials are a receiver token.
func RegisterAlertmanager(s *Server, svc *alertmanager.Service) {
	h := &alertmanagerAPI{svc: svc}
	const pattern = "POST /api/alertmanager"
	s.SetBodyLimit(pattern, svc.MaxBodyBytes())
	s.HandleRole(pattern, http.HandlerFunc(h.post), credential.Receiver)
}

type alertmanagerAPI struct {
	svc *alertmanager.Service
}

// tooLarge refuses a body over a configured limit (413), naming the key.
type tooLarge struct {
	key   string
	limit int64
}

func (e tooLarge) Error() string {
	return fmt.Sprintf("the body is larger than %d bytes (%s)", e.limit, e.key)
}

func (e tooLarge) Unwrap() error { return core.ErrTooLarge }

func (e tooLarge) ProblemMembers() map[string]any { return map[string]any{"limit_key": e.key} }

type alertmanagerAlertJSON struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

type alertmanagerJSON struct {
	Version           string                  `json:"version"`
	GroupKey          string                  `json:"groupKey"`
	TruncatedAlerts   int                     `json:"truncatedAlerts"`
	Status            string                  `json:"status"`
	Receiver          string                  `json:"receiver"`
	GroupLabels       map[string]string       `json:"groupLabels"`
	CommonLabels      map[string]string       `json:"commonLabels"`
	CommonAnnotations map[string]string       `json:"commonAnnotations"`
	ExternalURL       string                  `json:"externalURL"`
	Alerts            []alertmanagerAlertJSON `json:"alerts"`
}

// post takes one notification; Alertmanager retries anything but a 2xx,
// and a notification taken twice changes nothing.
func (h *alertmanagerAPI) post(w http.ResponseWriter, r *http.Request) {
	limit := h.svc.MaxBodyBytes()
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		WriteError(w, r, tooLarge{key: "alertmanager.max_body_bytes", limit: limit})
		return
	case err != nil:
		WriteError(w, r, core.Invalid("body", "%v", err))
		return
	}
	var body alertmanagerJSON
	if err := json.Unmarshal(data, &body); err != nil {
		WriteError(w, r, core.Invalid("body", "not a notification of Alertmanager's webhook: %v", err))
		return
	}
	n := alertmanager.Notification{Version: body.Version, GroupKey: body.GroupKey, TruncatedAlerts: body.TruncatedAlerts,
		Status: body.Status, Receiver: body.Receiver, GroupLabels: body.GroupLabels, CommonLabels: body.CommonLabels,
		CommonAnnotations: body.CommonAnnotations, ExternalURL: body.ExternalURL}
	for _, a := range body.Alerts {
		n.Alerts = append(n.Alerts, alertmanager.Alert{Status: a.Status, Labels: a.Labels, Annotations: a.Annotations,
			StartsAt: a.StartsAt, EndsAt: a.EndsAt, GeneratorURL: a.GeneratorURL, Fingerprint: a.Fingerprint})
	}
	if err := h.svc.Receive(r.Context(), n); err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
}
