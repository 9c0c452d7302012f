package schenotify_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain raises the default parallelism: the acceptance tests spend
// their time waiting for due seconds, not computing, so running more of
// them at once keeps the package well under its time budget on two cores.
// An explicit -test.parallel wins.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	os.Exit(m.Run())
}
