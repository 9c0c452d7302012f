package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/telemetry"
)

func TestLoggerCarriesTraceIDs(t *testing.T) {
	tp, err := telemetry.NewTracerProvider(context.Background(), "svc", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown(context.Background())
	var buf bytes.Buffer
	log := telemetry.NewLogger(&buf, slog.LevelInfo, "svc")
	ctx, span := tp.Tracer("t").Start(context.Background(), "op")
	log.InfoContext(ctx, "hello", "scope", "i.w.n")
	span.End()
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not JSON: %s", buf.Bytes())
	}
	if rec["trace_id"] != span.SpanContext().TraceID().String() || rec["span_id"] != span.SpanContext().SpanID().String() || rec["service"] != "svc" {
		t.Fatalf("record = %v", rec)
	}
	buf.Reset()
	log.Info("no span")
	if strings.Contains(buf.String(), "trace_id") {
		t.Fatalf("trace id without a span: %s", buf.String())
	}
}

func TestTracerProviderRejectsUnknownProtocol(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}
	if _, err := telemetry.NewTracerProvider(context.Background(), "svc", func(k string) string { return env[k] }); err == nil {
		t.Fatal("unknown protocol accepted")
	}
	env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/protobuf"
	tp, err := telemetry.NewTracerProvider(context.Background(), "svc", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	_ = tp.Shutdown(context.Background())
}

func TestHealthReadyMetrics(t *testing.T) {
	reg := telemetry.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "langbot_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	var ready atomic.Bool
	srv, err := httpserve.Listen("127.0.0.1:0", telemetry.Mux(reg, func() error {
		if !ready.Load() {
			return errors.New("starting")
		}
		return nil
	}), httpserve.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	if code, _ := get("/readyz"); code != 503 {
		t.Fatalf("/readyz before ready = %d", code)
	}
	ready.Store(true)
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz when ready = %d", code)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "langbot_test_total 3") || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics = %d %s", code, body[:min(200, len(body))])
	}
}
