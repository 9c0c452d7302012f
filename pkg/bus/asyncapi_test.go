package bus_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// ownKindsChecked are the plugins whose internal subjects are their own
// kinds, checked against the document by the plugin's own test
// (TestAsyncAPIDocumentsInternalSubjects in services/<plugin>).
var ownKindsChecked = []string{"githubkit", "schenotify", "takeover"}

// TestAsyncAPIMatchesSubjects keeps docs/asyncapi.json and the subject
// builders in step: every address in the document is one the builders
// make, and every subject the builders make is documented.
func TestAsyncAPIMatchesSubjects(t *testing.T) {
	documented := slices.DeleteFunc(bustest.AsyncAPIAddresses(t, "../../docs/asyncapi.json"), func(a string) bool {
		return slices.ContainsFunc(ownKindsChecked, func(p string) bool { return strings.HasPrefix(a, "{prefix}."+p+".") })
	})

	s := wire.Subjects{Prefix: bustest.DocPrefix}
	sc := bustest.DocScope(t)
	var built []string
	add := func(subject string) { built = append(built, bustest.DocAddress(subject)) }
	for _, ep := range wire.Endpoints {
		add(s.Invocation(bustest.DocPlugin, ep, sc))
	}
	add(s.Lifecycle(bustest.DocPlugin, wire.LifecycleAttach, sc))
	add(s.Lifecycle(bustest.DocPlugin, wire.LifecycleRevoke, sc))
	for _, a := range []string{wire.ActionSendMessage, wire.ActionGetBotInfo, wire.ActionGetBots, wire.ActionInvokeLLM, wire.ActionGateRevoke} {
		add(s.HostAction(a, sc))
	}
	slices.Sort(built)
	if !slices.Equal(documented, built) {
		t.Fatalf("docs/asyncapi.json and pkg/bus disagree\ndocumented: %v\nbuilt:      %v", documented, built)
	}
}
