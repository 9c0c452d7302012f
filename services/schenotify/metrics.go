package schenotify

import "github.com/prometheus/client_golang/prometheus"

// Delivery outcomes counted by schenotify_deliveries_total.
const (
	outcomeDelivered = "delivered"
	outcomeRetry     = "retry"
	outcomeFailed    = "failed"
	outcomePaused    = "paused"
	outcomeNotDue    = "not_due"
	outcomeDeleted   = "deleted"
	// outcomeAIFallback counts an AI-written delivery that sent its
	// fallback (no answer, no model, budget used up, turned off), on top
	// of the delivery's own outcome.
	outcomeAIFallback = "ai_fallback"
)

type metrics struct {
	lateness   prometheus.Histogram
	created    *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	pending    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "schenotify_delivery_lateness_seconds",
			Help:    "Time from a reminder's due second to its send_message request.",
			Buckets: []float64{.05, .1, .25, .5, .75, 1, 1.5, 2, 5, 10, 30, 60, 300, 3600},
		}),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schenotify_reminders_created_total",
			Help: "Reminders created, by kind (once, cron, every).",
		}, []string{"kind"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schenotify_deliveries_total",
			Help: "Fired reminders handled, by outcome.",
		}, []string{"outcome"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schenotify_reminders_pending",
			Help: "Reminders in the scopes' indexes, refreshed by each recovery sweep.",
		}),
	}
	for _, c := range []prometheus.Collector{m.lateness, m.created, m.deliveries, m.pending} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, o := range []string{outcomeDelivered, outcomeRetry, outcomeFailed, outcomePaused, outcomeNotDue, outcomeDeleted, outcomeWaiting} {
		m.deliveries.WithLabelValues(o)
	}
	return m, nil
}
