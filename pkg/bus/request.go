package bus

import (
	"context"
	"errors"
	"time"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// request is one traced request/reply hop of a protocol client: the host
// side's invocations (Invoker) and a plugin's host actions (Host). Both
// send a JSON body with the trace context and one key header, wait under a
// default timeout when ctx has no deadline, and read an error reply as the
// wire error, under one CLIENT span named for the subject's template.
type request struct {
	subject  string
	template string // the subject with wildcards for the scope: span name
	op       string // messaging.operation.name
	attrs    []attribute.KeyValue
	// keyHeader, when key is not empty, carries key (the invocation id,
	// the idempotency key).
	keyHeader, key string
	timeout        time.Duration
}

// do sends body and returns the reply. A transport failure comes back as
// nats returned it (nats.ErrNoResponders, a deadline) with the span marked
// no_responders, timeout or transport; an error reply comes back with its
// *Error. The callback, when not nil, runs with the span still open and
// the request's ctx.
func (r request) do(ctx context.Context, nc *nats.Conn, tracer trace.Tracer, body []byte, onError func(context.Context, *wire.Error)) (*nats.Msg, error) {
	ctx, span := tracer.Start(ctx, "send "+r.template, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(MessagingAttrs(r.subject, r.template, "send", r.op)...), trace.WithAttributes(r.attrs...))
	defer span.End()
	msg := &nats.Msg{Subject: r.subject, Header: nats.Header{}, Data: body}
	msg.Header.Set(wire.HeaderContentType, wire.ContentTypeJSON)
	if r.key != "" {
		msg.Header.Set(r.keyHeader, r.key)
	}
	Inject(ctx, msg.Header)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	reply, err := nc.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		span.SetStatus(codes.Error, "no_responders")
		return nil, err
	case isTimeout(err):
		span.SetStatus(codes.Error, "timeout")
		return nil, err
	case err != nil:
		span.SetStatus(codes.Error, "transport")
		return nil, err
	}
	if e := wire.DecodeReply(reply.Header, reply.Data); e != nil {
		span.SetStatus(codes.Error, e.Word)
		span.SetAttributes(attrErrorType.String(e.Word))
		if onError != nil {
			onError(ctx, e)
		}
		return reply, e
	}
	return reply, nil
}

// isTimeout reports whether a request's error is its deadline passing.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}
