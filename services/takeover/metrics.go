package takeover

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/services/takeover/store"
)

// metrics are the service's Prometheus metrics (spec §3.8). Labels never
// carry a scope.
type metrics struct {
	decisions       *prometheus.CounterVec
	decisionSeconds prometheus.Histogram
	unkeyed         prometheus.Counter
	gateMissed      prometheus.Counter
	gates           *prometheus.CounterVec
	recordDropped   *prometheus.CounterVec
	identityRefused prometheus.Counter
	noticeFailed    prometheus.Counter
	alertFailed     prometheus.Counter
	metaPending     prometheus.Gauge
	trims           *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, view *store.View, nowMS func() int64) (*metrics, error) {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "takeover_decisions_total", Help: "Blocking decisions by path and result.",
		}, []string{"path", "blocked"}),
		decisionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "takeover_decision_seconds", Help: "Time from a parsed event to its blocking decision.",
			Buckets: []float64{5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2, 0.25, 1},
		}),
		unkeyed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "takeover_events_unkeyed_total", Help: "Events without a valid trusted bot uuid.",
		}),
		gateMissed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "takeover_gate_missed_total",
			Help: "Events a package let pass by its event gate that this replica would have blocked (the gate was revoked too late).",
		}),
		gates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "takeover_gates_total", Help: "Event gates asked for, by result (given, refused).",
		}, []string{"result"}),
		recordDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "takeover_record_dropped_total", Help: "Recordings dropped, by reason.",
		}, []string{"reason"}),
		identityRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "takeover_identity_refused_total", Help: "Recordings refused by a session's bot or adapter identity.",
		}),
		noticeFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "takeover_notice_failed_total", Help: "User notices dropped after their retries.",
		}),
		alertFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "takeover_alert_failed_total", Help: "Operator alerts dropped after their retries.",
		}),
		metaPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "takeover_meta_pending", Help: "Sessions whose coalesced list metadata waits to be written.",
		}),
		trims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "takeover_history_trims_total", Help: "History trims, by result (ok, failed; skipped: the trim queue was full).",
		}, []string{"result"}),
	}
	stale := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "takeover_view_stale", Help: "1 while the session view is stale.",
	}, func() float64 {
		if view.Live() {
			return 0
		}
		return 1
	})
	active := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "takeover_sessions_active", Help: "Sessions taken over, as this replica's view sees them.",
	}, func() float64 { return float64(view.ActiveCount(nowMS())) })
	for _, c := range []prometheus.Collector{m.decisions, m.decisionSeconds, m.unkeyed, m.gateMissed, m.gates, m.recordDropped, m.identityRefused, m.noticeFailed, m.alertFailed, m.metaPending, m.trims, stale, active} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
