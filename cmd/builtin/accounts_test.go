package builtin_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/cmd/builtin"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// TestAccountsFileGenerated keeps the shipped accounts file and its
// embedded copy equal to the generator's output.
func TestAccountsFileGenerated(t *testing.T) {
	want, err := builtin.Accounts(wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		filepath.Join("..", "..", "deploy", "k8s", "base", "nats", "accounts.conf"),
		filepath.Join("..", "..", "pkg", "natsembed", "accounts.conf"),
	} {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is not what the services declare: run go generate ./pkg/natsembed", path)
		}
	}
}

// TestGrantsFollowDeclarations checks that the grants name what each
// service declares and nothing of another's.
func TestGrantsFollowDeclarations(t *testing.T) {
	grants, err := builtin.Grants(wire.Subjects{})
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != len(builtin.Names()) {
		t.Fatalf("%d users for %d services", len(grants), len(builtin.Names()))
	}
	for i, g := range grants {
		name := builtin.Names()[i]
		if g.User != name {
			t.Errorf("user %d is %q, want %q", i, g.User, name)
		}
		pub := g.PublishAllowed()
		for _, want := range []string{"$KV." + bus.Bucket(name) + ".>", "$KV." + bus.DedupeBucket(name) + ".>", bus.AuthCalloutSubject} {
			if !slices.Contains(pub, want) && !slices.Contains(g.SubscribeAllowed(), want) {
				t.Errorf("%s: %s not granted", name, want)
			}
		}
		for _, other := range builtin.Names() {
			if other == name {
				continue
			}
			for _, s := range append(pub, g.SubscribeAllowed()...) {
				if slices.Contains([]string{"$KV." + bus.Bucket(other) + ".>", "langbot.plugin." + other + ".>", "langbot." + other + ".>"}, s) {
					t.Errorf("%s is granted %s of %s", name, s, other)
				}
			}
		}
	}
	// takeover's store owns its history shards, timers and blobs (a part
	// that is a bus.ResourceOwner), and may only look at the legacy stream
	tk := grants[slices.Index(builtin.Names(), store.Plugin)].PublishAllowed()
	for _, want := range []string{
		"$JS.API.STREAM.CREATE." + store.HistoryStream(store.HistoryShards-1),
		"$JS.API.STREAM.CREATE." + store.TimerStream,
		"$O." + store.BlobBucket + ".>",
		"$JS.API.STREAM.INFO." + store.LegacyHistoryStream,
	} {
		if !slices.Contains(tk, want) {
			t.Errorf("takeover: %s not granted", want)
		}
	}
	if slices.Contains(tk, "$JS.API.STREAM.CREATE."+store.LegacyHistoryStream) {
		t.Error("takeover may create the legacy history stream")
	}
}

// TestAccountsFollowPrefix: a deployment with another subject prefix gets
// every grant under it; only bucket and stream names keep "langbot".
func TestAccountsFollowPrefix(t *testing.T) {
	subj, err := wire.NewSubjects("acme")
	if err != nil {
		t.Fatal(err)
	}
	grants, err := builtin.Grants(subj)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range append(grants, bus.HostGrants(subj), bus.LegacyPackageGrants(subj)) {
		for _, s := range append(g.PublishAllowed(), g.SubscribeAllowed()...) {
			if strings.HasPrefix(s, wire.DefaultPrefix+".") || strings.Contains(s, "."+wire.DefaultPrefix+".") {
				t.Errorf("%s: %s keeps the default prefix", g.User, s)
			}
		}
		if pub := g.PublishAllowed(); !slices.ContainsFunc(pub, func(s string) bool { return strings.HasPrefix(s, "acme.") }) {
			t.Errorf("%s: no subject under acme: %v", g.User, pub)
		}
	}
}
