package githubkit

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// serviceMetrics are the service's Prometheus metrics (spec §7.7).
type serviceMetrics struct {
	github         ghclient.Metrics
	polls          *prometheus.CounterVec
	push           *prometheus.CounterVec
	enrichment     *prometheus.CounterVec
	configWarnings *prometheus.CounterVec
}

// newMetrics creates the metrics and registers them with reg (nil = not
// registered, for tests that only read them).
func newMetrics(reg prometheus.Registerer) (*serviceMetrics, error) {
	m := &serviceMetrics{
		github: ghclient.NewMetrics(),
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_polls_total", Help: "Polls by outcome.",
		}, []string{"outcome"}),
		push: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_push_messages_total", Help: "Push messages by outcome (sent, failed, dropped; held by the push budget, summary and summary_failed for the held counts).",
		}, []string{"outcome"}),
		enrichment: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_enrichment_calls_total", Help: "Enrichment calls by kind and outcome.",
		}, []string{"kind", "outcome"}),
		configWarnings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_config_warnings_total", Help: "Config values replaced by the normaliser, by field.",
		}, []string{"field"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.github.Requests, m.github.Seconds, m.github.RateRemaining, m.polls, m.push, m.enrichment, m.configWarnings} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
