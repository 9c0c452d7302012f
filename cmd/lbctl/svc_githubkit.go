package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// githubkitService registers the githubkit service with lbctl: lbctl dev
// runs it in process (with --fake-github, against an in-process fake GitHub
// whose feeds grow by one event every 30 s), routes "!gh" to it and sends
// it every chat message as an event (link cards); lbctl
// import githubkit adopts the original plugin's stored subscriptions.
func githubkitService() *devService {
	var fake bool
	var apiURL string
	var hook githubkit.Flags
	return &devService{
		Plugin:       githubkit.Plugin,
		Config:       json.RawMessage(`{"language":"en_US","poll_interval":60,"max_events_per_push":5}`),
		SecretFields: githubkit.Declaration().SecretFields(),
		CommandWords: githubkit.Declaration().CommandNames(),
		// chat messages reach githubkit's link cards
		Events: len(githubkit.Declaration().Events) > 0,
		DevFlags: func(fs *flag.FlagSet) {
			fs.BoolVar(&fake, "fake-github", false, "githubkit: serve GitHub from an in-process fake (no network needed)")
			fs.StringVar(&apiURL, "github-api-url", "", "githubkit: GitHub API root for installations that set none, e.g. https://ghe.example.com/api/v3 (default https://api.github.com)")
			hook.RegisterWebhook(fs, os.Getenv, "github-")
		},
		Build: func(ctx context.Context, env *svcmain.Env) (svcmain.Service, error) {
			f, err := devGitHubFlags(fake, apiURL)
			if err != nil {
				return nil, err
			}
			f.WebhookURL, f.WebhookAddr = hook.WebhookURL, hook.WebhookAddr
			if !fake {
				return f.Build(ctx, env)
			}
			fg := fakegithub.New(fakegithub.Options{AutoRepos: true, AutoEvents: 30 * time.Second})
			f.APIURL = fg.URL
			svc, err := f.Build(ctx, env)
			if err != nil {
				fg.Close()
				return nil, err
			}
			return &fakeGitHubService{Service: svc, fake: fg}, nil
		},
		Banner: func(env *DevEnv) []string {
			var lines []string
			if hook.WebhookURL != "" {
				lines = append(lines, "githubkit: webhook receiver at "+strings.TrimRight(hook.WebhookURL, "/")+githubkit.WebhookPath+"<hook-id> (!gh hook <owner/repo> as an admin, in a private chat)")
			}
			return append(lines, githubkitBanner(fake, apiURL)...)
		},
		Commands: []command{{Name: "import githubkit", Summary: "adopt the original GitHubKit plugin's stored subscriptions", Run: runImportGithubkit}},
	}
}

// githubkitBanner is the dev banner's line on where GitHub is.
func githubkitBanner(fake bool, apiURL string) []string {
	if fake {
		return []string{"githubkit: fake GitHub (try !gh repo octocat/Hello-World, then !gh sub octocat/Hello-World)"}
	}
	if apiURL != "" {
		return []string{"githubkit: GitHub API " + apiURL}
	}
	return nil
}

// devGitHubFlags returns githubkit's flags for lbctl dev. The SSRF guard
// stays on unless GitHub is the in-process fake on loopback: a dev run
// against real GitHub must not reach the machine's private network either.
func devGitHubFlags(fake bool, apiURL string) (githubkit.Flags, error) {
	f := githubkit.Flags{AllowPrivateNetworks: fake, AllowHTTP: fake}
	if apiURL == "" {
		return f, nil
	}
	if fake {
		return f, fmt.Errorf("--github-api-url and --fake-github exclude each other")
	}
	u, err := githubkit.ParseAPIURL(apiURL, false)
	if err != nil {
		return f, fmt.Errorf("--github-api-url: %w", err)
	}
	if privateHost(u) {
		return f, fmt.Errorf("--github-api-url: a private, loopback, link-local or other non-public address is refused (the SSRF guard is on; use --fake-github for a local GitHub)")
	}
	f.APIURL = u
	return f, nil
}

// privateHost reports whether the API root's host is localhost or a literal
// address the SSRF guard refuses (ghclient.RefusedAddr: anything not global
// unicast), so lbctl dev refuses it up front; names that resolve there are
// refused by the guard at dial.
func privateHost(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	return ghclient.RefusedAddr(a)
}

// fakeGitHubService runs the service and stops the fake GitHub after it.
type fakeGitHubService struct {
	svcmain.Service
	fake *fakegithub.Server
}

func (s *fakeGitHubService) Run(ctx context.Context) error {
	defer s.fake.Close()
	return s.Service.Run(ctx)
}

// importInput checks an import's --scope and reads the file named by the
// flag called name.
func importInput(scope, name, path string) (binding.Scope, []byte, error) {
	sc, err := binding.ParseScope(scope)
	if err != nil {
		return binding.Scope{}, nil, fmt.Errorf("--scope: %w", err)
	}
	if path == "" {
		return binding.Scope{}, nil, fmt.Errorf("--%s is required", name)
	}
	data, err := os.ReadFile(path)
	return sc, data, err
}

// runImportGithubkit is lbctl import githubkit --scope <inst>.<ws>.<inst-uuid> --file <json> [--dry-run].
func runImportGithubkit(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("import githubkit", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	scope := fs.String("scope", "", "installation scope <instance>.<workspace>.<installation>")
	file := fs.String("file", "", "the original plugin's stored subscription document (JSON)")
	dry := fs.Bool("dry-run", false, "print the plan and write nothing")
	replicas := fs.Int("replicas", 1, "replicas of the githubkit stream if it has to be created")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sc, doc, err := importInput(*scope, "file", *file)
	if err != nil {
		return err
	}
	nc, subj, js, err := conn.connectJS(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	sum, err := githubkit.Import(ctx, js, githubkit.ImportOptions{Scope: sc, Doc: doc, DryRun: *dry, Prefix: subj.Prefix, Replicas: *replicas})
	if sum != nil {
		if *dry {
			fmt.Fprintln(io.out, "dry run: nothing written")
		}
		fmt.Fprint(io.out, sum.String())
	}
	return err
}
