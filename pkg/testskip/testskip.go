// Package testskip is the one way a test skips for a part of the machine
// that is missing (LangBot's plugin runtime, a real LangBot, Chromium): it
// skips with the reason, or fails when the group's "required" variable is
// set (what CI sets), and records the group and the command that enables it
// in the file named by LANGBOT_SKIP_REPORT, so that `make test` can end by
// naming every group it skipped.
//
// It imports the standard library only.
package testskip

import (
	"fmt"
	"os"
	"testing"
)

// EnvReport names the file a skip is recorded in (one line per skip:
// group, tab, enabling command, tab, reason); unset, nothing is recorded.
const EnvReport = "LANGBOT_SKIP_REPORT"

// Group is a set of tests that need the same missing part.
type Group struct {
	// Name names the group in the summary ("runtime tests").
	Name string
	// Enable is the command that makes the group run.
	Enable string
	// Required, when set to "1" or "true" in the environment, turns a skip
	// into a failure (empty: never).
	Required string
}

// Browser is the group of tests that drive Debian's Chromium; CI (which
// sets CI=true) fails instead of skipping them.
func Browser() Group {
	return Group{Name: "browser tests (Chromium)", Enable: "scripts/test-deps.sh", Required: "CI"}
}

// Skip skips t for reason, or fails it when g's Required variable is "1".
func (g Group) Skip(t testing.TB, reason string) {
	t.Helper()
	if v := os.Getenv(g.Required); g.Required != "" && (v == "1" || v == "true") {
		t.Fatalf("%s: %s (%s=%s: a skip is a failure; %s)", g.Name, reason, g.Required, v, g.Enable)
	}
	record(g, reason)
	t.Skipf("%s: %s (enable with: %s)", g.Name, reason, g.Enable)
}

// record appends one line to the report file; a failure to write is not a
// test failure (the summary is a courtesy).
func record(g Group, reason string) {
	path := os.Getenv(EnvReport)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "%s\t%s\t%s\n", g.Name, g.Enable, reason)
}
