package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/store"
)

// gaugesTimeout bounds the store's counting for one read of /metrics.
const gaugesTimeout = 5 * time.Second

var (
	breakersDesc  = prometheus.NewDesc("jarvis_breakers", "Agents' circuit breakers, by state (closed, open, half-open).", []string{"state"}, nil)
	tripwiresDesc = prometheus.NewDesc("jarvis_tripwires",
		"Tripwires that are not deleted, by status (armed, tripped, disabled, quarantined).", []string{"status"}, nil)
	incidentsDesc = prometheus.NewDesc("jarvis_incidents_open", "Alerts not yet resolved (folded or grouped ones count as one).", nil, nil)
)

// gauges is what the store counts of the workspace, on /metrics: read when
// /metrics is, so every Jarvis on one database, holder or standby, says
// the same.
type gauges struct {
	store *store.Store
	log   zerolog.Logger
}

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- breakersDesc
	ch <- tripwiresDesc
	ch <- incidentsDesc
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), gaugesTimeout)
	defer cancel()
	counts, err := g.store.Gauges(ctx)
	if err != nil {
		g.log.Err(err).Msg("Failed to count the workspace for /metrics")
		return
	}
	for state, n := range counts.Breakers {
		ch <- prometheus.MustNewConstMetric(breakersDesc, prometheus.GaugeValue, float64(n), state)
	}
	for status, n := range counts.Tripwires {
		ch <- prometheus.MustNewConstMetric(tripwiresDesc, prometheus.GaugeValue, float64(n), status)
	}
	ch <- prometheus.MustNewConstMetric(incidentsDesc, prometheus.GaugeValue, float64(counts.OpenIncidents))
}
