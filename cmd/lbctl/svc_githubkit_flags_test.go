package main

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"
)

// TestDevGitHubAPIURL: lbctl dev --github-api-url is checked before the
// service is built: an unparsable or non-http(s) root and the combination
// with --fake-github are refused with a clear error.
func TestDevGitHubAPIURL(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--github-api-url", "ftp://ghe.example.com/api/v3"}, "--github-api-url"},
		{[]string{"--github-api-url", "https://ghe.example.com/api/v3", "--fake-github"}, "exclude each other"},
	} {
		svc, _ := devGitHubService(t, tc.args)
		_, err := svc.Build(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.args, err, tc.want)
		}
	}
	if fs := flag.NewFlagSet("dev", flag.ContinueOnError); true {
		githubkitService().DevFlags(fs)
		if fs.Lookup("github-api-url") == nil {
			t.Fatal("no --github-api-url flag")
		}
	}
}

// devGitHubService is the githubkit service of lbctl dev with args parsed
// into its dev flags.
func devGitHubService(t *testing.T, args []string) (*devService, *flag.FlagSet) {
	t.Helper()
	svc := githubkitService()
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	svc.DevFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return svc, fs
}
