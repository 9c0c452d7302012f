// Command schenotify runs the reminder service (services/schenotify)
// against a NATS server. Flags and environment are the common ones of
// pkg/svcmain (NATS_URL, NATS_USER, NATS_PASSWORD, NATS_CREDS,
// NATS_TLS_CA/CERT/KEY, LANGBOT_SUBJECT_PREFIX, LANGBOT_HTTP_ADDR,
// LANGBOT_JS_REPLICAS, LANGBOT_STATE_KEY, LANGBOT_WORKERS,
// LANGBOT_LOG_LEVEL, OTEL_*). The default time zone of installations that
// set none is the process zone: TZ, else /etc/localtime, else UTC.
//
// It imports pkg/svcmain and its service only, and links no NATS server.
package main

import (
	"os"

	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/services/schenotify"
)

func main() { os.Exit(svcmain.Main(schenotify.Binary(), os.Args[1:], os.Getenv, os.Stderr)) }
