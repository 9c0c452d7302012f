package githubkit

import (
	"encoding/json"
	"time"

	"github.com/langbot-nats/plugins/pkg/settings"
)

// The settings of review reminders (reviews.go) and AI summaries
// (summary.go).
const (
	defaultAISummariesPerDay = 20
	maxAISummariesPerDay     = 1000
)

// readFeatSettings reads timezone (the zone review reminders' times are
// in; default the process zone) and ai_summaries_per_day (0 turns
// summaries off).
func readFeatSettings(r *settings.Reader, s *Settings) {
	s.Zone = time.Local
	if v, ok := r.Raw("timezone"); ok {
		var name string
		if json.Unmarshal(v, &name) != nil {
			r.Warn("timezone", settings.WrongType, s.Zone.String())
		} else if name != "" {
			if loc, err := time.LoadLocation(name); err == nil && name != "Local" {
				s.Zone = loc
			} else {
				r.Warn("timezone", settings.Invalid, s.Zone.String())
			}
		}
	}
	s.AISummariesPerDay = r.Int("ai_summaries_per_day", defaultAISummariesPerDay, settings.Ints{Min: 0, Max: maxAISummariesPerDay, Strings: true})
}
