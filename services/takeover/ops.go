package takeover

import (
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// ops is the console operations (do, pages.go): sessions and messages
// (console_sessions.go), take over, release and mark handled
// (console_actions.go), reply (reply.go), cards and blobs
// (console_cards.go), export, delete and clear (console_delete.go); the
// operators' `!ho` command (commands.go) and the request_human tool
// (tool.go) run through them. It implements console.Operations for the
// HTTP console (console_support.go) and calls down into notices.
type ops struct {
	st       *store.Store
	view     *store.View
	trims    *store.Trimmer
	bots     *botCache
	notices  *notices
	runner   *bus.Runner // host, dedupe bucket, authority view, installation config; set once the runner exists
	nc       *nats.Conn  // the max payload, the live subscriptions
	subj     wire.Subjects
	catalog  *i18n.Catalog
	settings *settingsCache
	now      clock
	log      *slog.Logger

	maxBody      int           // Config.MaxBody
	recordBudget time.Duration // Config.RecordBudget
	hostTimeout  time.Duration // Config.HostTimeout
	assist       *assist       // `ho suggest` (assist.go)
}
