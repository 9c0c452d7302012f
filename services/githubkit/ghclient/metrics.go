package ghclient

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the client's Prometheus metrics (spec §7.7); the service
// builds and registers them with its own (NewMetrics) and hands them to
// NewHTTPClient through HTTPOptions.
type Metrics struct {
	Requests      *prometheus.CounterVec   // by route template and status code
	Seconds       *prometheus.HistogramVec // latency by route template
	RateRemaining *prometheus.GaugeVec     // last X-RateLimit-Remaining, by resource
}

// NewMetrics creates the metrics, unregistered.
func NewMetrics() Metrics {
	return Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_github_requests_total", Help: "GitHub API requests by route template and status code.",
		}, []string{"endpoint", "code"}),
		Seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "githubkit_github_request_seconds", Help: "GitHub API request latency by route template.",
			Buckets: prometheus.DefBuckets,
		}, []string{"endpoint"}),
		RateRemaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "githubkit_github_ratelimit_remaining", Help: "Last X-RateLimit-Remaining seen, by resource.",
		}, []string{"resource"}),
	}
}
