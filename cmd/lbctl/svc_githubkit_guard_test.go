package main

import (
	"context"
	"strings"
	"testing"
)

// TestDevKeepsSSRFGuard: lbctl dev turns githubkit's SSRF guard (and plain
// http) off only with --fake-github; an API root on a private, loopback or
// link-local address without it is refused before anything is built (dev
// turned the guard off in every run).
func TestDevKeepsSSRFGuard(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		wantPrivate bool
		wantErr     string
	}{
		{nil, false, ""},
		{[]string{"--github-api-url", "https://ghe.example.com/api/v3"}, false, ""},
		{[]string{"--fake-github"}, true, ""},
		{[]string{"--github-api-url", "https://127.0.0.1:8443/api/v3"}, false, "private"},
		{[]string{"--github-api-url", "https://10.1.2.3/api/v3"}, false, "private"},
		{[]string{"--github-api-url", "https://[::1]/api/v3"}, false, "private"},
		{[]string{"--github-api-url", "https://169.254.169.254/latest"}, false, "private"},
		{[]string{"--github-api-url", "https://localhost/api/v3"}, false, "private"},
		{[]string{"--github-api-url", "http://ghe.example.com/api/v3"}, false, "--github-api-url"},
	} {
		svc, fs := devGitHubService(t, tc.args)
		f, err := devGitHubFlags(fs.Lookup("fake-github").Value.String() == "true", fs.Lookup("github-api-url").Value.String())
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want one naming %q", tc.args, err, tc.wantErr)
			}
			// Build refuses it the same way, before touching the environment.
			if _, berr := svc.Build(context.Background(), nil); berr == nil {
				t.Errorf("%q: Build accepted it", tc.args)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if f.AllowPrivateNetworks != tc.wantPrivate || f.AllowHTTP != tc.wantPrivate {
			t.Errorf("%q: guard off=%v http=%v, want both %v", tc.args, f.AllowPrivateNetworks, f.AllowHTTP, tc.wantPrivate)
		}
	}
}
