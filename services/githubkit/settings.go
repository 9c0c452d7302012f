package githubkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"net/url"
	"regexp"
	"strings"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

// Defaults and bounds of the installation settings (spec §2).
const (
	DefaultLanguage         = i18n.ZhHans
	DefaultAPIURL           = "https://api.github.com"
	DefaultPollInterval     = 120
	MinPollInterval         = 60
	MaxPollInterval         = 3600
	DefaultMaxEventsPerPush = 5
	MaxMaxEventsPerPush     = 30
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
	// APIErr is the reason APIURL is refused (nil when valid).
	APIErr error
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
	)
}

// Warning is a config value the normaliser replaced (spec §2 rule 1). It
// names the field and the reason, never the value.
type Warning struct {
	Field  string
	Reason string
}

func (w Warning) String() string { return w.Field + ": " + w.Reason }

// Warning reasons.
const (
	reasonClampedLow  = "below minimum, clamped"
	reasonClampedHigh = "above maximum, clamped"
	reasonInvalid     = "invalid, default used"
	reasonWrongType   = "wrong type, default used"
)

// NormalizeSettings normalises a raw plugin config (a JSON object; nil or
// null = empty) per spec §2. allowHTTP is the operator flag
// --github-allow-http. It never fails: an unusable github_api_url is
// reported in Settings.APIErr, the rest through warnings.
func NormalizeSettings(raw json.RawMessage, allowHTTP bool) (Settings, []Warning) {
	return normalizeSettings(raw, normOptions{allowHTTP: allowHTTP, minPoll: MinPollInterval, defaultURL: DefaultAPIURL})
}

// normOptions are the operator settings normalisation depends on.
type normOptions struct {
	allowHTTP  bool
	minPoll    int    // poll_interval floor (tests of real schedules lower it)
	defaultURL string // github_api_url when the installation sets none
}

func normalizeSettings(raw json.RawMessage, o normOptions) (Settings, []Warning) {
	allowHTTP := o.allowHTTP
	var m map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			m = nil
		}
	}
	var warns []Warning
	warn := func(field, reason string) { warns = append(warns, Warning{field, reason}) }
	s := Settings{}

	switch v := m["language"].(type) {
	case nil:
		s.Language = DefaultLanguage
	case string:
		s.Language = strings.TrimSpace(v)
		if s.Language == "" {
			s.Language = DefaultLanguage
		}
	default:
		s.Language = DefaultLanguage
		warn("language", reasonWrongType)
	}

	switch v := m["github_token"].(type) {
	case nil:
	case string:
		s.Token = strings.TrimSpace(v)
	default:
		warn("github_token", reasonWrongType)
	}

	var w string
	s.PollInterval, w = normInt(m, "poll_interval", DefaultPollInterval, o.minPoll, MaxPollInterval)
	if w != "" {
		warn("poll_interval", w)
	}
	s.MaxEventsPerPush, w = normInt(m, "max_events_per_push", DefaultMaxEventsPerPush, 1, MaxMaxEventsPerPush)
	if w != "" {
		warn("max_events_per_push", w)
	}

	switch v := m["github_api_url"].(type) {
	case nil:
		s.APIURL = o.defaultURL
	case string:
		if strings.TrimSpace(v) == "" {
			s.APIURL = o.defaultURL
			break
		}
		u, err := ParseAPIURL(v, allowHTTP)
		if err != nil {
			s.APIURL = strings.TrimSpace(v)
			s.APIErr = err
			warn("github_api_url", reasonInvalid)
		} else {
			s.APIURL = u
		}
	default:
		s.APIURL = ""
		s.APIErr = fmt.Errorf("%w: not a string", ErrAPIURL)
		warn("github_api_url", reasonWrongType)
	}

	switch v := m["subscribe_requires_admin"].(type) {
	case nil:
	case bool:
		s.SubscribeRequiresAdmin = v
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			s.SubscribeRequiresAdmin = true
		case "false":
		default:
			warn("subscribe_requires_admin", reasonInvalid)
		}
	default:
		warn("subscribe_requires_admin", reasonWrongType)
	}
	return s, warns
}

var decimalRE = regexp.MustCompile(`^[+-]?[0-9]+$`)

// normInt parses an integer setting: a JSON integer, an integral JSON number
// or a decimal string. Missing, null or "" gives def silently; out of range
// is clamped with a warning; anything else gives def with a warning.
func normInt(m map[string]any, key string, def, lo, hi int) (int, string) {
	v, ok := m[key]
	if !ok || v == nil {
		return def, ""
	}
	var num string
	switch x := v.(type) {
	case json.Number:
		num = x.String()
	case string:
		num = strings.TrimSpace(x)
		if num == "" {
			return def, ""
		}
		if !decimalRE.MatchString(num) {
			return def, reasonInvalid
		}
	default:
		return def, reasonWrongType
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || !r.IsInt() {
		return def, reasonInvalid
	}
	n := r.Num()
	switch {
	case n.Cmp(big.NewInt(int64(lo))) < 0:
		return lo, reasonClampedLow
	case n.Cmp(big.NewInt(int64(hi))) > 0:
		return hi, reasonClampedHigh
	}
	if !n.IsInt64() || n.Int64() > math.MaxInt32 {
		return hi, reasonClampedHigh
	}
	return int(n.Int64()), ""
}

// ParseAPIURL validates and normalises a github_api_url (spec §2): an
// absolute https URL (http only when allowHTTP) with a host and no userinfo,
// query or fragment; trailing slashes are dropped.
func ParseAPIURL(raw string, allowHTTP bool) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: unparsable", ErrAPIURL)
	}
	switch {
	case !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("%w: not absolute", ErrAPIURL)
	case u.Scheme != "https" && !(allowHTTP && u.Scheme == "http"):
		return "", fmt.Errorf("%w: scheme not allowed", ErrAPIURL)
	case u.User != nil:
		return "", fmt.Errorf("%w: userinfo", ErrAPIURL)
	case u.RawQuery != "" || u.ForceQuery:
		return "", fmt.Errorf("%w: query", ErrAPIURL)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", fmt.Errorf("%w: fragment", ErrAPIURL)
	case u.Hostname() == "":
		return "", fmt.Errorf("%w: no host", ErrAPIURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	u.Host = strings.ToLower(u.Host)
	return u.String(), nil
}
