package takeover

import "github.com/langbot-nats/plugins/services/takeover/store"

// Plugin is the service's name: the runner's plugin, and the token every
// subject, key and resource of the service is named with (package store
// names them).
const Plugin = store.Plugin
