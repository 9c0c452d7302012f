package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ErrInvalidConfig wraps every invalid service or runner configuration: a
// service's New and NewRunner return it, wrapped with what is wrong.
var ErrInvalidConfig = errors.New("bus: invalid configuration")

// Deps are the live parts a service and its Runner use: one shape for
// every service. Conn is required; WithDefaults fills the rest.
type Deps struct {
	Conn *nats.Conn
	// JetStream defaults to a JetStream context on Conn.
	JetStream jetstream.JetStream
	// Subjects carries the subject prefix; the zero value is DefaultPrefix.
	Subjects wire.Subjects
	// Keyring seals secret config fields at rest; nil: none (then the
	// runner's SecretFields must be empty).
	Keyring *Keyring
	// Clock defaults to time.Now.
	Clock func() time.Time
	// Logger defaults to slog.Default(). The service name is already on it
	// when svcmain built it; nothing below adds it again.
	Logger *slog.Logger
	// TracerProvider defaults to no tracing.
	TracerProvider trace.TracerProvider
	// Registerer defaults to a private registry.
	Registerer prometheus.Registerer
}

// WithDefaults returns d with every unset part filled and the subject
// prefix checked. It does no I/O and is idempotent.
func (d Deps) WithDefaults() (Deps, error) {
	if d.Conn == nil {
		return d, fmt.Errorf("%w: no NATS connection", ErrInvalidConfig)
	}
	subj, err := wire.NewSubjects(d.Subjects.Prefix)
	if err != nil {
		return d, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	d.Subjects = subj
	if d.JetStream == nil {
		if d.JetStream, err = jetstream.New(d.Conn); err != nil {
			return d, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	if d.Clock == nil {
		d.Clock = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.TracerProvider == nil {
		d.TracerProvider = noop.NewTracerProvider()
	}
	if d.Registerer == nil {
		d.Registerer = prometheus.NewRegistry()
	}
	return d, nil
}
