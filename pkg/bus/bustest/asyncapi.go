package bustest

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// Placeholders of the AsyncAPI document (docs/asyncapi.json): build a
// subject with Subjects{Prefix: DocPrefix}, the scope DocScope and the ids
// DocID or DocShard, and DocAddress turns it into the document's form, so
// that a test compares what the builders make with what is documented.
const (
	DocPrefix = "PREFIX"
	DocPlugin = "PLUGIN"
	DocID     = "ID"
	DocShard  = "SHARD"
)

// DocScope is the placeholder scope of the AsyncAPI document.
func DocScope(t testing.TB) binding.Scope {
	t.Helper()
	sc, err := binding.ParseScope("INSTANCE.WORKSPACE.INSTALLATION")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

var docPlaceholders = strings.NewReplacer(DocPrefix, "{prefix}", DocPlugin, "{plugin}", "INSTANCE", "{instance}",
	"WORKSPACE", "{workspace}", "INSTALLATION", "{installation}", DocShard, "{shard}", DocID, "{id}")

// DocAddress returns a subject built from the placeholders in the
// document's form, e.g. "{prefix}.githubkit.poll.{instance}...".
func DocAddress(subject string) string { return docPlaceholders.Replace(subject) }

// AsyncAPIAddresses reads the AsyncAPI 3.0.0 document at path and returns
// its channel addresses, sorted.
func AsyncAPIAddresses(t testing.TB, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AsyncAPI string `json:"asyncapi"`
		Channels map[string]struct {
			Address string `json:"address"`
		} `json:"channels"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("bustest: %s: %v", path, err)
	}
	if doc.AsyncAPI != "3.0.0" {
		t.Fatalf("bustest: %s: asyncapi version %q", path, doc.AsyncAPI)
	}
	var addrs []string
	for _, c := range doc.Channels {
		addrs = append(addrs, c.Address)
	}
	slices.Sort(addrs)
	return addrs
}
