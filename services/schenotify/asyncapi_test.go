package schenotify_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// TestAsyncAPIDocumentsInternalSubjects keeps docs/asyncapi.json and schenotify's
// own subject kinds in step: the document's schenotify channels are exactly the
// subjects the service builds (the protocol's channels are pkg/bus's test).
func TestAsyncAPIDocumentsInternalSubjects(t *testing.T) {
	documented := slices.DeleteFunc(bustest.AsyncAPIAddresses(t, "../../docs/asyncapi.json"), func(a string) bool {
		return !strings.HasPrefix(a, "{prefix}."+schenotify.Plugin+".")
	})
	s := wire.Subjects{Prefix: bustest.DocPrefix}
	sc := bustest.DocScope(t)
	var built []string
	for _, kind := range []string{schenotify.KindSched, schenotify.KindDue} {
		subj, err := s.Internal(schenotify.Plugin, kind, sc, bustest.DocID)
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, bustest.DocAddress(subj))
	}
	slices.Sort(built)
	if !slices.Equal(documented, built) {
		t.Fatalf("docs/asyncapi.json and schenotify disagree\ndocumented: %v\nbuilt:      %v", documented, built)
	}
}
