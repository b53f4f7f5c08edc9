// Package metrics holds Jarvis's Prometheus collectors, shared by the
// packages that count things and the API that serves them.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry holds every Jarvis collector; the API serves it on /metrics.
var Registry = prometheus.NewRegistry()

var (
	// MessagesHandled counts chat messages Jarvis read from allowed people.
	MessagesHandled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jarvis_messages_handled_total",
		Help: "Chat messages read from allowed people.",
	})
	// MessagesLimited counts chat messages ignored because their sender
	// went past chat.sender_limit.
	MessagesLimited = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jarvis_messages_limited_total",
		Help: "Chat messages ignored because their sender went past the per-sender limit.",
	})
	// Commands counts commands run, by command name.
	Commands = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jarvis_commands_total",
		Help: "Commands run, by name.",
	}, []string{"command"})
	// SendErrors counts failed attempts to deliver outbox notices.
	SendErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jarvis_send_errors_total",
		Help: "Failed attempts to deliver outbox notices.",
	})
	// NoticesGivenUp counts outbox notices the sender gave up on after
	// the homeserver refused them core.MaxRefusals times in a row.
	NoticesGivenUp = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jarvis_notices_given_up_total",
		Help: "Outbox notices given up on after the homeserver kept refusing them (kept, not retried).",
	})
	// NoticesSent counts outbox notices delivered.
	NoticesSent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jarvis_notices_sent_total",
		Help: "Outbox notices delivered to Matrix.",
	})
	// SyncLag is the age of the newest event seen in the last sync.
	SyncLag = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jarvis_sync_lag_seconds",
		Help: "Time between the newest event's server timestamp and when Jarvis read it.",
	})
	// HTTPRequests counts API requests by route and status.
	HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jarvis_http_requests_total",
		Help: "API requests, by route and status code.",
	}, []string{"route", "code"})
	// RateLimited counts API requests refused with 429 by the callers'
	// rate limits, by the kind of bucket that was empty.
	RateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jarvis_http_rate_limited_total",
		Help: "API requests refused by the rate limits, by bucket kind (credential or address).",
	}, []string{"bucket"})
	// Transactions counts the store's transactions, each once however
	// often it was run.
	Transactions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jarvis_store_transactions_total",
		Help: "Store transactions, each counted once however often it was run.",
	})
	// TransactionReruns counts the runs of store transactions that
	// PostgreSQL refused and the store ran again, by why it refused:
	// serialization (40001), deadlock (40P01) or id collision (23505 on
	// the key of an id Jarvis made); and a heartbeat batch or card set
	// run at full isolation after its locked reads did not cover it
	// ("beyond locked reads").
	TransactionReruns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jarvis_store_transaction_reruns_total",
		Help: "Store transactions run again after PostgreSQL refused them, by reason (serialization, deadlock, id collision, or beyond locked reads: a heartbeat batch or card set run again at full isolation).",
	}, []string{"reason"})
)

// What an operator asks first of a running Jarvis: which build it is, and
// whether it is the one acting.
var (
	// BuildInfo is always 1, labelled with this build's version, commit
	// and Go version.
	BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "jarvis_build_info",
		Help: "Always 1: this build's version, commit and Go version.",
	}, []string{"version", "commit", "go_version"})
	// LeaseHeld is 1 while this Jarvis holds the workspace lease (it acts:
	// syncs, sends, runs the loops), 0 while it stands by.
	LeaseHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jarvis_lease_held",
		Help: "1 while this Jarvis holds the workspace lease and acts, 0 while it stands by.",
	})
	// LeaseEpoch is the epoch of the lease this Jarvis last held or saw
	// taken: it grows by one at every takeover.
	LeaseEpoch = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jarvis_lease_epoch",
		Help: "Epoch of the workspace lease this Jarvis last held or saw; one more at every takeover.",
	})
	// ModelTokens counts the tokens Jarvis's own language model used, by
	// model and direction (in: the prompt, out: the reply).
	ModelTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jarvis_model_tokens_total",
		Help: "Tokens Jarvis's own language model used, by model and direction (in, out).",
	}, []string{"model", "direction"})
	// ModelCost is what Jarvis's own model cost, by model, in the price
	// table's currency.
	ModelCost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jarvis_model_cost_total",
		Help: "What Jarvis's own language model cost, by model, priced by model.prices.",
	}, []string{"model"})
	// ModelFallbacks counts turns the grammar answered because the model
	// was not used, by reason (slow, down, budget, restart).
	ModelFallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jarvis_model_fallbacks_total",
		Help: "Chat turns the grammar answered because the model was slow, down or over budget, or its answer was cut off by a restart, by reason.",
	}, []string{"reason"})
	// ModelFirstToken is how long the model took to its first streamed
	// text, and ModelReply to its whole reply (every round of tool calls).
	ModelFirstToken = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "jarvis_model_first_token_seconds",
		Help:    "Time from a chat turn handed to the model to its first streamed text.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30},
	})
	ModelReply = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "jarvis_model_reply_seconds",
		Help:    "Time from a chat turn handed to the model to its whole reply, tool calls included.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60},
	})
)

func init() {
	Registry.MustRegister(MessagesHandled, MessagesLimited, Commands, SendErrors, NoticesSent, NoticesGivenUp, SyncLag, HTTPRequests, RateLimited,
		Transactions, TransactionReruns, BuildInfo, LeaseHeld, LeaseEpoch, ModelTokens, ModelCost, ModelFallbacks, ModelFirstToken, ModelReply,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Sum is the sum of a counter's values over all its labels in Registry, 0
// when it has none yet: what a benchmark reads before and after a run.
func Sum(name string) float64 {
	families, err := Registry.Gather()
	if err != nil {
		return 0
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
