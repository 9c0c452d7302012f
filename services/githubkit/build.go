package githubkit

import (
	"context"
	"flag"
	"strconv"
	"strings"

	"github.com/langbot-nats/plugins/pkg/svcmain"
)

// Flags are the service-specific flags of the binary and of lbctl dev.
type Flags struct {
	APIURL               string
	AllowPrivateNetworks bool
	AllowHTTP            bool
	PollWorkers          int
	// WebhookURL and WebhookAddr: the webhook receiver's public base URL
	// (empty: webhooks off) and its own listen address (empty: the
	// binary's HTTP server serves it).
	WebhookURL  string
	WebhookAddr string
}

// Webhook environment variables.
const (
	webhookURLEnv  = "LANGBOT_GITHUBKIT_WEBHOOK_URL"
	webhookAddrEnv = "LANGBOT_GITHUBKIT_WEBHOOK_ADDR"
)

// Register adds the flags to fs, defaulting to the environment.
func (f *Flags) Register(fs *flag.FlagSet, getenv func(string) string) {
	envBool := func(k string) bool { b, _ := strconv.ParseBool(strings.TrimSpace(getenv(k))); return b }
	n, _ := strconv.Atoi(getenv("GITHUBKIT_POLL_WORKERS"))
	fs.StringVar(&f.APIURL, "github-api-url", getenv("GITHUB_API_URL"), "default GitHub API root for installations that set none (GITHUB_API_URL)")
	fs.BoolVar(&f.AllowPrivateNetworks, "github-allow-private-networks", envBool("GITHUB_ALLOW_PRIVATE_NETWORKS"), "allow GitHub API URLs that resolve to private, loopback or link-local addresses")
	fs.BoolVar(&f.AllowHTTP, "github-allow-http", envBool("GITHUB_ALLOW_HTTP"), "allow http (not https) GitHub API URLs")
	fs.IntVar(&f.PollWorkers, "poll-workers", n, "polls running at once per replica (GITHUBKIT_POLL_WORKERS; default 16)")
	f.RegisterWebhook(fs, getenv, "")
}

// RegisterWebhook adds the webhook flags to fs under prefix (lbctl dev
// uses "github-"), defaulting to the environment.
func (f *Flags) RegisterWebhook(fs *flag.FlagSet, getenv func(string) string, prefix string) {
	fs.StringVar(&f.WebhookURL, prefix+"webhook-url", getenv(webhookURLEnv), "public base URL of the GitHub webhook receiver, e.g. https://bot.example.com; empty: webhooks off ("+webhookURLEnv+")")
	fs.StringVar(&f.WebhookAddr, prefix+"webhook-addr", getenv(webhookAddrEnv), "listen address of the webhook receiver; empty: served on the HTTP address ("+webhookAddrEnv+")")
}

// Build creates the service on a svcmain environment from the flags'
// values, as the binary and lbctl dev do: the shape of the other services'
// Build, with the flags as its receiver.
func (f *Flags) Build(_ context.Context, env *svcmain.Env) (svcmain.Service, error) {
	s, err := New(Config{
		Replicas:             env.Options.Replicas,
		Workers:              env.Options.Workers,
		Retention:            env.Options.Retention,
		PollWorkers:          f.PollWorkers,
		DefaultAPIURL:        f.APIURL,
		AllowPrivateNetworks: f.AllowPrivateNetworks,
		AllowHTTP:            f.AllowHTTP,
		WebhookURL:           f.WebhookURL,
		WebhookAddr:          f.WebhookAddr,
	}, env.Deps())
	if err != nil {
		return nil, err
	}
	// the receiver is on the binary's HTTP server unless it has its own
	// listener (Config.WebhookAddr), as takeover's console is
	if f.WebhookURL != "" && f.WebhookAddr == "" && env.Mux != nil {
		env.Mux.Handle(WebhookPath, s.WebhookHandler())
	}
	return s, nil
}

// Binary describes the githubkit binary: its name, its flags (Flags) and
// how the service is built from them.
func Binary() svcmain.Binary {
	var f Flags
	return svcmain.Binary{
		Name:  Plugin,
		Flags: f.Register,
		Build: f.Build,
	}
}
