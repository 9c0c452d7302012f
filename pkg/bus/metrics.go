package bus

import (
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
)

type runnerMetrics struct {
	invocations *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	rejected    prometheus.Counter
	lifecycle   *prometheus.CounterVec
	fired       *prometheus.CounterVec
	deferred    *prometheus.CounterVec
}

func newRunnerMetrics(reg prometheus.Registerer, plugin string) (*runnerMetrics, error) {
	labels := prometheus.Labels{"plugin": plugin}
	m := &runnerMetrics{
		invocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "langbot_invocations_total", Help: "Invocations answered, by endpoint and outcome.", ConstLabels: labels,
		}, []string{"endpoint", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "langbot_invocation_duration_seconds", Help: "Time from receipt to reply of an invocation.", ConstLabels: labels,
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 15},
		}, []string{"endpoint"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "langbot_invocations_rejected_total", Help: "Invocations answered 503 because the worker pool was full.", ConstLabels: labels,
		}),
		lifecycle: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "langbot_lifecycle_messages_total", Help: "Lifecycle messages handled, by kind and result.", ConstLabels: labels,
		}, []string{"kind", "result"}),
		fired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "langbot_fired_messages_total", Help: "Fired schedule messages handled, by consumer.", ConstLabels: labels,
		}, []string{"consumer"}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "langbot_fired_deferred_total", Help: "Fired messages nak'd with a delay because their installation held its share of the pool, by consumer.", ConstLabels: labels,
		}, []string{"consumer"}),
	}
	for _, c := range []prometheus.Collector{m.invocations, m.latency, m.rejected, m.lifecycle, m.fired, m.deferred} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *runnerMetrics) outcome(ep wire.Endpoint, outcome string) {
	m.invocations.WithLabelValues(string(ep), outcome).Inc()
}
