package bustest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Invoker is a bus.Invoker that attaches each installation before its
// first invocation, as a host does (EnsureAttached): a runner refuses an
// invocation on a scope no attach has reached (403 not_attached). An
// installation the test attached itself keeps that attach. InvokeRaw is
// bus.Invoker's own and attaches nothing.
type Invoker struct {
	*bus.Invoker
	t  testing.TB
	js jetstream.JetStream
	// replicas returns the runners that must know the attach before the
	// invocation goes out (each has its own view); nil: the one that
	// acknowledged it is enough.
	replicas func() []*bus.Runner
	// seen holds the plugin/scope pairs known attached, so steady traffic
	// does not read the stream (which a cluster test may be failing over)
	seen sync.Map
}

// NewInvoker returns an attaching invoker over inv; replicas may be nil.
func NewInvoker(t testing.TB, inv *bus.Invoker, js jetstream.JetStream, replicas func() []*bus.Runner) *Invoker {
	return &Invoker{Invoker: inv, t: t, js: js, replicas: replicas}
}

// Invoke attaches req's installation if needed, then invokes.
func (i *Invoker) Invoke(ctx context.Context, plugin string, ep wire.Endpoint, id string, req *wire.Request) (json.RawMessage, error) {
	key := ""
	if req != nil && req.Binding.Validate() == nil {
		key = plugin + " " + bus.ScopeOf(req.Binding).String()
	}
	if _, known := i.seen.Load(key); key != "" && !known {
		cfg := req.Config
		if !json.Valid(cfg) {
			cfg = nil
		}
		EnsureAttached(i.t, i.js, plugin, req.Binding, cfg)
		if i.replicas != nil {
			for _, r := range i.replicas() {
				if r.Ready() {
					WaitAuthority(i.t, r, bus.ScopeOf(req.Binding), nil)
				}
			}
		}
		i.seen.Store(key, true)
	}
	raw, err := i.Invoker.Invoke(ctx, plugin, ep, id, req)
	// Without the replicas at hand, another replica than the one that
	// applied the attach may not have seen it yet: retry as a host would.
	for deadline := time.Now().Add(WaitTimeout); i.replicas == nil && errors.Is(err, wire.ErrNotAttached) &&
		time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(20 * time.Millisecond)
		raw, err = i.Invoker.Invoke(ctx, plugin, ep, id, req)
	}
	return raw, err
}
