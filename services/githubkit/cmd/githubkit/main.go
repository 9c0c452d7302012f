// Command githubkit runs the githubkit service: GitHub lookups and
// repository event push for LangBot, on NATS.
//
// The common flags and environment (NATS_URL, NATS_USER, NATS_PASSWORD,
// NATS_CREDS, NATS_TLS_CA/CERT/KEY, LANGBOT_SUBJECT_PREFIX,
// LANGBOT_HTTP_ADDR, LANGBOT_JS_REPLICAS, LANGBOT_STATE_KEY, LANGBOT_WORKERS,
// LANGBOT_LOG_LEVEL, OTEL_*) come from pkg/svcmain. This binary adds:
//
//	-github-api-url                  default API root (GITHUB_API_URL)
//	-github-allow-private-networks   turn the SSRF guard off (GITHUB_ALLOW_PRIVATE_NETWORKS=true)
//	-github-allow-http               accept http API URLs (GITHUB_ALLOW_HTTP=true)
//	-poll-workers                    polls at once (GITHUBKIT_POLL_WORKERS, default 16)
//
// It imports pkg/svcmain and its service only, and links no NATS server.
package main

import (
	"os"

	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/services/githubkit"
)

func main() { os.Exit(svcmain.Main(githubkit.Binary(), os.Args[1:], os.Getenv, os.Stderr)) }
