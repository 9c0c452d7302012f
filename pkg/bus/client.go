package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Invoker calls plugins as the host does (DESIGN 3.1): lbctl and tests use
// it, so they speak the protocol exactly as LangBot would.
type Invoker struct {
	nc       *nats.Conn
	subjects wire.Subjects
	tracer   trace.Tracer
	// Timeout applies when ctx has no deadline; default 30 s.
	Timeout time.Duration
}

// NewInvoker returns an Invoker on nc.
func NewInvoker(nc *nats.Conn, subjects wire.Subjects, tp trace.TracerProvider) *Invoker {
	return &Invoker{nc: nc, subjects: subjects, tracer: tracerOrNoop(tp), Timeout: 30 * time.Second}
}

// Invoke sends req to plugin's endpoint with the given invocation id (a
// retry passes the same id) and returns the reply body. An error reply
// comes back as *Error; no service gives ErrNoService.
func (iv *Invoker) Invoke(ctx context.Context, plugin string, ep wire.Endpoint, invocationID string, req *wire.Request) (json.RawMessage, error) {
	sc, err := req.Binding.Scope()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return iv.InvokeRaw(ctx, iv.subjects.Invocation(plugin, ep, sc), invocationID, body)
}

// ErrNoService is returned when no replica serves the subject.
var ErrNoService = errors.New("bus: no service is serving this plugin")

// InvokeRaw sends a raw body to an invocation subject; tests use it to
// send what a well-behaved host never would.
func (iv *Invoker) InvokeRaw(ctx context.Context, subject, invocationID string, body []byte) (json.RawMessage, error) {
	// span names carry the template, not the scope, to keep them few
	template := subject
	if plugin, ep, _, err := iv.subjects.ParseInvocation(subject); err == nil {
		template = iv.subjects.InvocationAll(plugin, ep)
	}
	reply, err := request{subject: subject, template: template, op: "invoke",
		keyHeader: wire.HeaderInvocationID, key: invocationID, timeout: iv.Timeout}.do(ctx, iv.nc, iv.tracer, body, nil)
	var e *wire.Error
	switch {
	case errors.As(err, &e): // the plugin's answer
		return reply.Data, e
	case errors.Is(err, nats.ErrNoResponders):
		return nil, ErrNoService
	case err != nil:
		return nil, fmt.Errorf("bus: invoke: %w", err)
	}
	return reply.Data, nil
}

// NewInvocationID returns a fresh invocation id.
func NewInvocationID() string { return nats.NewInbox()[len(nats.InboxPrefix):] }

// ScopeOf is a convenience for tests and tools: the scope of a binding
// known to be valid (the zero Scope otherwise).
func ScopeOf(b binding.Binding) binding.Scope {
	sc, _ := b.Scope()
	return sc
}
