package takeover

import (
	"embed"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

//go:embed messages/*.json
var messageFS embed.FS

// Messages loads the service's message catalogue: config labels and
// descriptions for the manifest ("config.<field>.label|description") and the
// console's error texts ("error.<code or reason>").
func Messages() (*i18n.Catalog, error) {
	return i18n.Load(messageFS, "messages")
}
