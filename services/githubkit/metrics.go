package githubkit

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the service's Prometheus metrics (spec §7.7).
type Metrics struct {
	githubRequests *prometheus.CounterVec
	githubSeconds  *prometheus.HistogramVec
	rateRemaining  *prometheus.GaugeVec
	polls          *prometheus.CounterVec
	push           *prometheus.CounterVec
	enrichment     *prometheus.CounterVec
	configWarnings *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil = not
// registered, for tests that only read them).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		githubRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_github_requests_total", Help: "GitHub API requests by route template and status code.",
		}, []string{"endpoint", "code"}),
		githubSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "githubkit_github_request_seconds", Help: "GitHub API request latency by route template.",
			Buckets: prometheus.DefBuckets,
		}, []string{"endpoint"}),
		rateRemaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "githubkit_github_ratelimit_remaining", Help: "Last X-RateLimit-Remaining seen, by resource.",
		}, []string{"resource"}),
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
		for _, c := range []prometheus.Collector{m.githubRequests, m.githubSeconds, m.rateRemaining, m.polls, m.push, m.enrichment, m.configWarnings} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
