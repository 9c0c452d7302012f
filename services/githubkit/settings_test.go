package githubkit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

func TestNormalizeSettingsDefaults(t *testing.T) {
	for _, raw := range []string{``, `null`, `{}`, `not json`} {
		s, w := githubkit.NormalizeSettings(json.RawMessage(raw), false)
		if s.Language != "zh_Hans" || s.PollInterval != 120 || s.MaxEventsPerPush != 5 || s.APIURL != ghclient.DefaultAPIURL ||
			s.APIErr != nil || s.SubscribeRequiresAdmin || s.Token != "" || len(w) != 0 {
			t.Errorf("%q: got %+v warnings %v", raw, s, w)
		}
	}
}

func TestNormalizeSettingsFields(t *testing.T) {
	type want struct {
		val  string
		warn bool
	}
	tests := []struct {
		field string
		value string // JSON
		want  want
	}{
		{"language", `"en_US"`, want{"en_US", false}},
		{"language", `""`, want{"zh_Hans", false}},
		{"language", `null`, want{"zh_Hans", false}},
		{"language", `"fr"`, want{"fr", false}},
		{"language", `5`, want{"zh_Hans", true}},
		{"github_token", `"  tok  "`, want{"tok", false}},
		{"github_token", `true`, want{"", true}},
		{"poll_interval", `90`, want{"90", false}},
		{"poll_interval", `90.0`, want{"90", false}},
		{"poll_interval", `"300"`, want{"300", false}},
		{"poll_interval", `""`, want{"120", false}},
		{"poll_interval", `null`, want{"120", false}},
		{"poll_interval", `0`, want{"60", true}},
		{"poll_interval", `-5`, want{"60", true}},
		{"poll_interval", `"30"`, want{"60", true}},
		{"poll_interval", `4000`, want{"3600", true}},
		{"poll_interval", `1e12`, want{"3600", true}},
		{"poll_interval", `90.5`, want{"120", true}},
		{"poll_interval", `"90.5"`, want{"120", true}},
		{"poll_interval", `"abc"`, want{"120", true}},
		{"poll_interval", `true`, want{"120", true}},
		{"poll_interval", `[1]`, want{"120", true}},
		{"max_events_per_push", `10`, want{"10", false}},
		{"max_events_per_push", `0`, want{"1", true}},
		{"max_events_per_push", `31`, want{"30", true}},
		{"max_events_per_push", `"x"`, want{"5", true}},
		{"max_events_per_push", `2.5`, want{"5", true}},
		{"max_events_per_push", `false`, want{"5", true}},
		{"subscribe_requires_admin", `true`, want{"true", false}},
		{"subscribe_requires_admin", `"TRUE"`, want{"true", false}},
		{"subscribe_requires_admin", `"false"`, want{"false", false}},
		{"subscribe_requires_admin", `"yes"`, want{"false", true}},
		{"subscribe_requires_admin", `1`, want{"false", true}},
		{"github_api_url", `"https://ghe.example.com/api/v3/"`, want{"https://ghe.example.com/api/v3", false}},
		{"github_api_url", `""`, want{ghclient.DefaultAPIURL, false}},
		{"github_api_url", `"http://ghe.example.com/api/v3"`, want{"err", true}},
		{"github_api_url", `"https://u:p@ghe.example.com"`, want{"err", true}},
		{"github_api_url", `"https://ghe.example.com/?x=1"`, want{"err", true}},
		{"github_api_url", `"https://ghe.example.com/#f"`, want{"err", true}},
		{"github_api_url", `"ghe.example.com/api/v3"`, want{"err", true}},
		{"github_api_url", `"file:///etc/passwd"`, want{"err", true}},
		{"github_api_url", `42`, want{"err", true}},
	}
	for _, tc := range tests {
		t.Run(tc.field+"="+tc.value, func(t *testing.T) {
			raw := fmt.Sprintf(`{%q:%s}`, tc.field, tc.value)
			s, warns := githubkit.NormalizeSettings(json.RawMessage(raw), false)
			var got string
			switch tc.field {
			case "language":
				got = s.Language
			case "github_token":
				got = s.Token
			case "poll_interval":
				got = fmt.Sprint(s.PollInterval)
			case "max_events_per_push":
				got = fmt.Sprint(s.MaxEventsPerPush)
			case "subscribe_requires_admin":
				got = fmt.Sprint(s.SubscribeRequiresAdmin)
			case "github_api_url":
				got = s.APIURL
				if s.APIErr != nil {
					got = "err"
					if !errors.Is(s.APIErr, ghclient.ErrAPIURL) {
						t.Errorf("APIErr %v is not ErrAPIURL", s.APIErr)
					}
				}
			}
			if got != tc.want.val {
				t.Errorf("%s = %q, want %q", tc.field, got, tc.want.val)
			}
			if (len(warns) > 0) != tc.want.warn {
				t.Errorf("warnings %v, want warning=%v", warns, tc.want.warn)
			}
			for _, w := range warns {
				if w.Field != tc.field {
					t.Errorf("warning for %s, want %s", w.Field, tc.field)
				}
			}
		})
	}
}

func TestNormalizeSettingsAllowHTTP(t *testing.T) {
	s, _ := githubkit.NormalizeSettings(json.RawMessage(`{"github_api_url":"http://127.0.0.1:9/api/v3"}`), true)
	if s.APIErr != nil || s.APIURL != "http://127.0.0.1:9/api/v3" {
		t.Fatalf("with the flag: %q %v", s.APIURL, s.APIErr)
	}
}

func TestSettingsNeverLogToken(t *testing.T) {
	s, _ := githubkit.NormalizeSettings(json.RawMessage(`{"github_token":"ghp_secret123"}`), false)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("cfg", "settings", s)
	if strings.Contains(buf.String(), "ghp_secret123") || !strings.Contains(buf.String(), `"token_set":true`) {
		t.Fatalf("log %s", buf.String())
	}
}
