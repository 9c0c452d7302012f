package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// TestStartRefusesWhatOneServerCannotHonour: each bad setting is refused
// before anything is written to the data directory.
func TestStartRefusesWhatOneServerCannotHonour(t *testing.T) {
	good := svcmain.Options{Replicas: 1, Prefix: wire.DefaultPrefix}
	for _, tc := range []struct {
		name string
		opts svcmain.Options
		e    embedded
	}{
		{"three replicas", svcmain.Options{Replicas: 3, Prefix: wire.DefaultPrefix}, embedded{listen: "127.0.0.1:0"}},
		{"another prefix", svcmain.Options{Replicas: 1, Prefix: "other"}, embedded{listen: "127.0.0.1:0"}},
		{"cert without key", good, embedded{listen: "127.0.0.1:0", cert: "c.pem"}},
		{"client CA without cert", good, embedded{listen: "127.0.0.1:0", clientCA: "ca.pem"}},
		{"listen without port", good, embedded{listen: "127.0.0.1"}},
		{"listen with a bad port", good, embedded{listen: "127.0.0.1:99999"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			e.dir = filepath.Join(t.TempDir(), "data")
			noEnv := func(string) string { return "" }
			e.getenv = noEnv
			o := tc.opts
			st, err := e.start(context.Background(), &o, noEnv, slog.New(slog.DiscardHandler))
			if !errors.Is(err, errConfig) {
				if st != nil && st.Stop != nil {
					st.Stop()
				}
				t.Fatalf("start = %v, want errConfig", err)
			}
			if _, err := os.Stat(e.dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the data directory was created: %v", err)
			}
		})
	}
}
