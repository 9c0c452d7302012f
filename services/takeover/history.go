package takeover

import (
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// visible returns the entries the console may see (spec §5.3 rule 5): the
// record's gen only, the newest limit of them, oldest first.
func visible(entries []store.StoredEntry, gen string, limit int) []model.Entry {
	out := make([]model.Entry, 0, min(len(entries), limit))
	for _, e := range entries {
		if !e.Corrupt && e.Gen == gen {
			out = append(out, e.Entry)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}
