package githubkit

import "github.com/langbot-nats/plugins/pkg/settings"

// The settings of AI summaries
// (summary.go).
const (
	defaultAISummariesPerDay = 20
	maxAISummariesPerDay     = 1000
)

// readFeatSettings reads ai_summaries_per_day (0 turns summaries off).
func readFeatSettings(r *settings.Reader, s *Settings) {
	s.AISummariesPerDay = r.Int("ai_summaries_per_day", defaultAISummariesPerDay, settings.Ints{Min: 0, Max: maxAISummariesPerDay, Strings: true})
}
