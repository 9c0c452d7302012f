package githubkit

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Defaults and bounds of the installation settings (spec §2).
const (
	defaultLanguage         = i18n.ZhHans
	defaultPollInterval     = 120
	minPollInterval         = 60
	maxPollInterval         = 3600
	defaultMaxEventsPerPush = 5
	maxMaxEventsPerPush     = 30
)

// Settings is an installation's normalised plugin config (spec §2). The
// token is plain text here: Settings redacts itself in logs, and the stored
// form (authority) carries the sealed token instead.
type Settings struct {
	Language               string
	Token                  string
	PollInterval           int
	MaxEventsPerPush       int
	APIURL                 string // normalised, no trailing slash; may be invalid (see APIErr)
	SubscribeRequiresAdmin bool
	// LinkCards turns link cards on for the installation (cards.go).
	LinkCards bool
	// CommandPrefix is the installation's command_prefix: the prefix of
	// texts when the user's is not known (pkg/plugin.CommandPrefix).
	CommandPrefix string
	// APIErr is the reason APIURL is refused (nil when valid).
	APIErr error
	// Timezone is the installation's IANA zone (timezone); UTC when unset
	// or unknown. Zone is it loaded: quiet hours, digests and review
	// reminder times are read in it. Never nil.
	Timezone string
	Zone     *time.Location
	// AISummariesPerDay is the installation's daily budget of gh summary
	// (ai_summaries_per_day); 0 turns it off.
	AISummariesPerDay int
}

// LogValue implements slog.LogValuer; the token never appears.
func (s Settings) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("language", s.Language),
		slog.Bool("token_set", s.Token != ""),
		slog.Int("poll_interval", s.PollInterval),
		slog.Int("max_events_per_push", s.MaxEventsPerPush),
		slog.Bool("api_url_valid", s.APIErr == nil),
		slog.Bool("subscribe_requires_admin", s.SubscribeRequiresAdmin),
		slog.Bool("link_cards", s.LinkCards),
	)
}

// Warning is a config value the normaliser replaced (spec §2 rule 1). It
// names the field and the reason (a settings.Reason's text), never the
// value.
type Warning struct {
	Field  string
	Reason string
}

func (w Warning) String() string { return w.Field + ": " + w.Reason }

// NormalizeSettings normalises a raw plugin config (a JSON object; nil or
// null = empty) per spec §2. allowHTTP is the operator flag
// --github-allow-http. It never fails: an unusable github_api_url is
// reported in Settings.APIErr, the rest through warnings.
func NormalizeSettings(raw json.RawMessage, allowHTTP bool) (Settings, []Warning) {
	return normalizeSettings(raw, normOptions{allowHTTP: allowHTTP, minPoll: minPollInterval, defaultURL: ghclient.DefaultAPIURL})
}

// normOptions are the operator settings normalisation depends on.
type normOptions struct {
	allowHTTP  bool
	minPoll    int    // poll_interval floor (tests of real schedules lower it)
	defaultURL string // github_api_url when the installation sets none
}

func normalizeSettings(raw json.RawMessage, o normOptions) (Settings, []Warning) {
	r := settings.Read(raw)
	s := Settings{
		Language:         r.String("language", defaultLanguage, settings.Strings{Trim: true, EmptyIsDefault: true}),
		Token:            r.String("github_token", "", settings.Strings{Trim: true}),
		PollInterval:     r.Int("poll_interval", defaultPollInterval, settings.Ints{Min: o.minPoll, Max: maxPollInterval, Strings: true}),
		MaxEventsPerPush: r.Int("max_events_per_push", defaultMaxEventsPerPush, settings.Ints{Min: 1, Max: maxMaxEventsPerPush, Strings: true}),
		APIURL:           o.defaultURL,
	}
	if v, ok := r.Raw("github_api_url"); ok {
		var text string
		switch {
		case json.Unmarshal(v, &text) != nil:
			s.APIURL = ""
			s.APIErr = fmt.Errorf("%w: not a string", ghclient.ErrAPIURL)
			r.Warn("github_api_url", settings.WrongType, "")
		case strings.TrimSpace(text) == "":
		default:
			u, err := ParseAPIURL(text, o.allowHTTP)
			if err != nil {
				s.APIURL = strings.TrimSpace(text)
				s.APIErr = err
				r.Warn("github_api_url", settings.Invalid, "")
			} else {
				s.APIURL = u
			}
		}
	}
	s.SubscribeRequiresAdmin = r.Bool("subscribe_requires_admin", false, settings.Bools{})
	s.LinkCards = r.Bool("link_cards", true, settings.Bools{})
	s.CommandPrefix = r.CommandPrefix()
	s.Zone = r.Zone("timezone", time.UTC)
	s.Timezone = s.Zone.String()
	readFeatSettings(r, &s)
	var warns []Warning
	for _, w := range r.Warnings() {
		warns = append(warns, Warning{Field: w.Field, Reason: string(w.Reason)})
	}
	return s, warns
}

// ParseAPIURL validates and normalises a github_api_url (spec §2): an
// absolute https URL (http only when allowHTTP) with a host and no userinfo,
// query or fragment; trailing slashes are dropped.
func ParseAPIURL(raw string, allowHTTP bool) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: unparsable", ghclient.ErrAPIURL)
	}
	switch {
	case !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("%w: not absolute", ghclient.ErrAPIURL)
	case u.Scheme != "https" && !(allowHTTP && u.Scheme == "http"):
		return "", fmt.Errorf("%w: scheme not allowed", ghclient.ErrAPIURL)
	case u.User != nil:
		return "", fmt.Errorf("%w: userinfo", ghclient.ErrAPIURL)
	case u.RawQuery != "" || u.ForceQuery:
		return "", fmt.Errorf("%w: query", ghclient.ErrAPIURL)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", fmt.Errorf("%w: fragment", ghclient.ErrAPIURL)
	case u.Hostname() == "":
		return "", fmt.Errorf("%w: no host", ghclient.ErrAPIURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	u.Host = strings.ToLower(u.Host)
	return u.String(), nil
}
