package takeover_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// TestAsyncAPIDocumentsInternalSubjects keeps docs/asyncapi.json and
// takeover's own subject kinds in step: the document's takeover channels are
// exactly the subjects the service builds (the protocol's channels are
// pkg/bus's test).
func TestAsyncAPIDocumentsInternalSubjects(t *testing.T) {
	documented := slices.DeleteFunc(bustest.AsyncAPIAddresses(t, "../../docs/asyncapi.json"), func(a string) bool {
		return !strings.HasPrefix(a, "{prefix}."+store.Plugin+".")
	})
	s := wire.Subjects{Prefix: bustest.DocPrefix}
	sc := bustest.DocScope(t)
	var built []string
	for _, in := range []struct {
		kind string
		ids  []string
	}{
		{store.KindTimer, []string{bustest.DocID}},
		{store.KindExpire, []string{bustest.DocID}},
		{store.KindHistory, []string{bustest.DocShard, bustest.DocID}},
		{store.KindLive, nil},
	} {
		subj, err := s.Internal(store.Plugin, in.kind, sc, in.ids...)
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, bustest.DocAddress(subj))
	}
	slices.Sort(built)
	if !slices.Equal(documented, built) {
		t.Fatalf("docs/asyncapi.json and takeover disagree\ndocumented: %v\nbuilt:      %v", documented, built)
	}
}
