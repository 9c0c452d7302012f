package takeover

import (
	"embed"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

//go:embed messages/*.json
var messageFS embed.FS

// Catalog loads the service's message catalogue: config labels and
// descriptions for the manifest ("config.<field>.label|description"), the
// console's error texts ("error.<code or reason>"), the alerts, the command
// answers and the handoff tool's text.
func Catalog() (*i18n.Catalog, error) {
	return i18n.Load(messageFS, "messages")
}

// text renders key in the settings' language, naming commands with the
// settings' command prefix (the typed one in a command's answer).
func text(cat *i18n.Catalog, set model.Settings, key string, args map[string]string) string {
	return cat.PrefixedText(set.Language, key, plugin.CommandPrefix("", set.CommandPrefix), args)
}
