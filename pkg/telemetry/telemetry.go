// Package telemetry sets up what every service binary reports about itself:
// an OpenTelemetry tracer provider configured from the standard OTEL_*
// environment, JSON logs carrying the trace and span ids, and the HTTP
// endpoints /healthz, /readyz and /metrics (Prometheus text).
//
// Nothing here is global: the tracer provider, logger and registry are
// returned to the caller, who passes them to the services it runs.
//
// It may import OpenTelemetry (API, SDK, OTLP exporters, semconv) and
// Prometheus' client; nothing of this module.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Getenv looks up an environment variable; os.Getenv in binaries, a map in
// tests.
type Getenv func(string) string

// NewTracerProvider returns a tracer provider for service. It exports over
// OTLP when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is set (protocol from OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf, the
// OpenTelemetry default, or grpc) and OTEL_TRACES_EXPORTER is not "none"; otherwise spans are
// created (so logs carry trace ids) but not exported. The exporters read the
// rest of the OTEL_* variables themselves. OTEL_SERVICE_NAME overrides
// service.
func NewTracerProvider(ctx context.Context, service string, getenv Getenv) (*sdktrace.TracerProvider, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv("OTEL_SERVICE_NAME"); v != "" {
		service = v
	}
	res, err := resource.Merge(resource.Default(),
		resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service)))
	if err != nil {
		res = resource.Default()
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if endpoint != "" && getenv("OTEL_TRACES_EXPORTER") != "none" {
		var exp sdktrace.SpanExporter
		proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		if proto == "" {
			proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		}
		switch proto {
		case "", "http/protobuf":
			exp, err = otlptracehttp.New(ctx)
		case "grpc":
			exp, err = otlptracegrpc.New(ctx)
		default:
			return nil, fmt.Errorf("telemetry: unsupported OTLP protocol %q", proto)
		}
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// ParseLevel parses debug, info, warn or error ("" is info).
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("telemetry: log level %q: %w", s, err)
	}
	return l, nil
}

// LogKeyService is the log attribute that names the service a record
// comes from. NewLogger is the one place that sets it: pkg/bus and the
// services log through the logger they are given and never add it again,
// so every record carries it exactly once.
const LogKeyService = "service"

// NewLogger returns a JSON logger for one service whose records carry
// LogKeyService and, when logged with a context holding a span, trace_id
// and span_id.
func NewLogger(w io.Writer, level slog.Level, service string) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(traceHandler{h}).With(LogKeyService, service)
}

// traceHandler adds the ids of the span in the record's context.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(a)}
}
func (h traceHandler) WithGroup(n string) slog.Handler { return traceHandler{h.Handler.WithGroup(n)} }

// ErrNotReady is what a readiness check returns while a part is not ready.
var ErrNotReady = errors.New("telemetry: not ready")
