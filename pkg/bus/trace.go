package bus

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// HeaderCarrier adapts nats.Header to the OpenTelemetry TextMapCarrier, so
// W3C trace context travels in NATS headers both ways.
type HeaderCarrier nats.Header

var _ propagation.TextMapCarrier = HeaderCarrier{}

// Get returns the first value of key.
func (c HeaderCarrier) Get(key string) string { return nats.Header(c).Get(key) }

// Set sets key to value.
func (c HeaderCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

// Keys returns the header names.
func (c HeaderCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// propagator is W3C trace context and baggage; it is stateless, so one
// value serves every caller without being package-level mutable state.
func propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Inject writes ctx's trace context into h.
func Inject(ctx context.Context, h nats.Header) { propagator().Inject(ctx, HeaderCarrier(h)) }

// Extract returns ctx carrying the remote trace context found in h; a
// missing or malformed traceparent leaves ctx unchanged (a new root).
func Extract(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	return propagator().Extract(ctx, HeaderCarrier(h))
}

// RemoteSpanContext returns the span context carried by h, for linking a
// scheduled delivery to the trace that scheduled it.
func RemoteSpanContext(h nats.Header) trace.SpanContext {
	return trace.SpanContextFromContext(Extract(context.Background(), h))
}

// Semantic-convention attribute keys for messaging spans (OpenTelemetry
// messaging conventions), plus the scope attributes of this project.
const (
	attrMessagingSystem  = attribute.Key("messaging.system")
	attrDestination      = attribute.Key("messaging.destination.name")
	attrDestTemplate     = attribute.Key("messaging.destination.template")
	attrOperationType    = attribute.Key("messaging.operation.type")
	attrOperationName    = attribute.Key("messaging.operation.name")
	attrMessageID        = attribute.Key("messaging.message.id")
	attrConsumerGroup    = attribute.Key("messaging.consumer.group.name")
	attrBodySize         = attribute.Key("messaging.message.body.size")
	AttrScope            = attribute.Key("langbot.scope")
	AttrPlugin           = attribute.Key("langbot.plugin")
	AttrEndpoint         = attribute.Key("langbot.endpoint")
	AttrOutcome          = attribute.Key("langbot.outcome")
	attrErrorType        = attribute.Key("error.type")
	messagingSystemValue = "nats"
)

// MessagingAttrs returns the attributes of a span about one NATS message:
// system, destination (the concrete subject; scope ids are allowed in
// attributes) and its template, and the operation.
func MessagingAttrs(subject, template, opType, opName string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attrMessagingSystem.String(messagingSystemValue),
		attrDestination.String(subject),
		attrDestTemplate.String(template),
		attrOperationType.String(opType),
		attrOperationName.String(opName),
	}
}

// tracerOrNoop returns tp's tracer for this package, or a no-op tracer.
func tracerOrNoop(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer("github.com/langbot-nats/plugins/pkg/bus")
}

// startClientSpan starts a CLIENT or PRODUCER span for a storage or publish
// operation, using the tracer provider of the span already in ctx: work
// that runs inside a traced request shows its KV and stream operations,
// and untraced background work costs nothing. The returned func ends the
// span, recording err.
func startClientSpan(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.SpanContext().IsValid() {
		return ctx, func(error) {}
	}
	ctx, span := parent.TracerProvider().Tracer("github.com/langbot-nats/plugins/pkg/bus").Start(ctx, name,
		trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, "error")
			span.SetAttributes(attrErrorType.String(errorType(err)))
		}
		span.End()
	}
}

// errorType names an error for the error.type attribute without its text,
// which may carry key names.
func errorType(err error) string {
	var e *wire.Error
	switch {
	case errors.As(err, &e):
		return e.Word
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return "key_not_found"
	case IsCASConflict(err):
		return "revision_mismatch"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}

// kvAttrs are the attributes of a KV operation: bucket, key kind and scope,
// never the key's ids (they may encode user text).
func kvAttrs(bucket, op string, sc binding.Scope, kind string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("db.system.name", "nats_kv"),
		attribute.String("db.collection.name", bucket),
		attribute.String("db.operation.name", op),
		attribute.String("langbot.key_kind", kind),
		AttrScope.String(sc.String()),
	}
}
