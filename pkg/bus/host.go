package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// ErrHostTimeout is returned when a host action got no reply in time: the
// outcome is unknown (the host may have acted), so callers retry with the
// same idempotency key.
var ErrHostTimeout = errors.New("bus: host action timed out, outcome unknown")

// ErrNoHost is returned when nobody serves host actions (NATS no
// responders); nothing was sent.
var ErrNoHost = errors.New("bus: no host is serving actions")

// Host calls the host's actions (DESIGN 3.4) for a plugin.
type Host struct {
	nc       *nats.Conn
	subjects wire.Subjects
	plugin   string
	tracer   trace.Tracer
	timeout  time.Duration
	// onRefused handles a 403 binding_refused to the request made with
	// binding b: it marks the authority superseded when b is still its
	// binding, and returns the current active binding when that is another
	// one (retry true), so the action is retried once with it.
	onRefused func(ctx context.Context, sc binding.Scope, b binding.Binding) (current binding.Binding, retry bool)
}

// NewHost returns a host-action client without a binding_refused hook, for
// tools that are not a Runner (the Runner's Host marks authorities
// superseded).
func NewHost(nc *nats.Conn, subjects wire.Subjects, plugin string, tp trace.TracerProvider) *Host {
	return &Host{nc: nc, subjects: subjects, plugin: plugin, tracer: tracerOrNoop(tp), timeout: wire.DefaultHostTimeout}
}

// SendMessage sends a message chain into a chat. idemKey must be stable per
// logical delivery and contain the scope, so the host can drop duplicates.
func (h *Host) SendMessage(ctx context.Context, b binding.Binding, msg wire.SendMessage, idemKey string) error {
	return h.Call(ctx, wire.ActionSendMessage, b, msg, idemKey, nil)
}

// InvokeLLM asks the host's LLM for one answer. The call is bounded by
// ctx (DefaultHostTimeout when it has no deadline); req.TimeoutMS, when
// zero, is filled from that deadline so the host gives up first. A host
// without a model answers 404 not_found with reason wire.ReasonNoLLMModel.
func (h *Host) InvokeLLM(ctx context.Context, b binding.Binding, req wire.InvokeLLM) (wire.LLMAnswer, error) {
	if req.TimeoutMS == 0 {
		left := h.timeout
		if dl, ok := ctx.Deadline(); ok {
			left = time.Until(dl)
		}
		// A margin for the reply's way back.
		req.TimeoutMS = max(int((left - left/10).Milliseconds()), 1)
	}
	var out wire.LLMAnswer
	err := h.Call(ctx, wire.ActionInvokeLLM, b, req, "", &out)
	return out, err
}

// BotInfo asks the host about one bot.
func (h *Host) BotInfo(ctx context.Context, b binding.Binding, botUUID string) (wire.BotInfo, error) {
	var out struct {
		Bot wire.BotInfo `json:"bot"`
	}
	err := h.Call(ctx, wire.ActionGetBotInfo, b, map[string]string{"bot_uuid": botUUID}, "", &out)
	return out.Bot, err
}

// Call performs a host action under binding b and decodes a success reply
// into out (when non-nil). Errors: an *Error from the host, ErrHostTimeout,
// ErrNoHost, or a transport error.
//
// A 403 binding_refused (the host's answer to this request, on the
// scope's own subject) runs the refusal hook of a Runner's Host: the
// authority is marked superseded only if b is still its binding; if the
// authority has meanwhile moved to another active binding (a config save
// while the caller held the old one), the action is sent once more with
// that binding, under the same idempotency key. So a retrying sender
// always ends up sending with the installation's current binding, whatever
// binding it started with.
func (h *Host) Call(ctx context.Context, action string, b binding.Binding, data any, idemKey string, out any) error {
	sc, err := b.Scope()
	if err != nil {
		return err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("bus: host action data: %w", err)
	}
	for attempt := 0; ; attempt++ {
		err = h.call(ctx, action, sc, b, raw, idemKey, out)
		var e *wire.Error
		if !errors.As(err, &e) || e.Code != 403 || h.onRefused == nil {
			return err
		}
		cur, retry := h.onRefused(context.WithoutCancel(ctx), sc, b)
		if !retry || attempt > 0 || cur == b {
			return err
		}
		if cs, cerr := cur.Scope(); cerr != nil || cs != sc {
			return err // cannot happen: the hook reads sc's own authority
		}
		b = cur
	}
}

// call sends one host action under b and decodes a success reply.
func (h *Host) call(ctx context.Context, action string, sc binding.Scope, b binding.Binding, raw json.RawMessage, idemKey string, out any) error {
	body, err := json.Marshal(wire.HostRequest{Binding: b, Plugin: h.plugin, Data: raw})
	if err != nil {
		return err
	}
	reply, err := request{subject: h.subjects.HostAction(action, sc), template: h.subjects.HostActionAll(action), op: action,
		attrs:     []attribute.KeyValue{AttrPlugin.String(h.plugin), AttrScope.String(sc.String())},
		keyHeader: wire.HeaderIdempotencyKey, key: idemKey, timeout: h.timeout}.do(ctx, h.nc, h.tracer, body, nil)
	var e *wire.Error
	switch {
	case errors.As(err, &e): // the host's answer
		return e
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%s: %w", action, ErrNoHost)
	case isTimeout(err):
		return fmt.Errorf("%s: %w", action, ErrHostTimeout)
	case err != nil:
		return fmt.Errorf("bus: host %s: %w", action, err)
	}
	if out != nil {
		if err := json.Unmarshal(reply.Data, out); err != nil {
			return fmt.Errorf("bus: host %s reply: %w", action, err)
		}
	}
	return nil
}
