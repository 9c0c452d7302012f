// Command takeover runs the takeover service: the blocking decision and
// recording on LangBot's chat events, takeover timing, and the console
// operations through the NATS page endpoint. Flags and environment are the
// shared ones of pkg/svcmain (NATS_URL, NATS_USER, NATS_PASSWORD,
// NATS_CREDS, NATS_TLS_*, LANGBOT_SUBJECT_PREFIX, LANGBOT_HTTP_ADDR,
// LANGBOT_JS_REPLICAS, LANGBOT_STATE_KEY, LANGBOT_WORKERS,
// LANGBOT_LOG_LEVEL, OTEL_*). With LANGBOT_CONSOLE_KEY set, the operator
// console is served under /console/ on LANGBOT_HTTP_ADDR.
// LANGBOT_TAKEOVER_META_WRITE_RATE bounds a replica's coalesced session
// metadata writes per second (default 200; see takeover.Config).
//
// It imports pkg/svcmain and its service only, and links no NATS server.
package main

import (
	"os"

	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/services/takeover"
)

func main() { os.Exit(svcmain.Main(takeover.Binary(), os.Args[1:], os.Getenv, os.Stderr)) }
