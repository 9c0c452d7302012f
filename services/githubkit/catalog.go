package githubkit

import (
	"embed"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

//go:embed messages/*.json
var messageFS embed.FS

// Catalog loads the embedded en_US and zh_Hans message catalogues.
func Catalog() (*i18n.Catalog, error) { return i18n.Load(messageFS, "messages") }

// texts is the catalogue in one language: events' renderers plus the
// root's own (link cards, the gh query subcommands).
type texts struct{ events.Texts }
