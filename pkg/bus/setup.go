package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// retrySetup runs a JetStream setup call (create a stream, bucket or
// consumer) until it succeeds, fails for good, or ctx is done. Right after
// a server restart or a leader change JetStream answers late, with no
// responders, or with 503 for a few seconds; a service that is starting
// then waits instead of exiting. Each attempt gets at most 5 s.
func retrySetup(ctx context.Context, f func(ctx context.Context) error) error {
	wait := 100 * time.Millisecond
	for {
		actx, cancel := withDefault(ctx)
		err := f(actx)
		cancel()
		if err == nil || !transientSetupError(err) || ctx.Err() != nil {
			return err
		}
		if _, ok := ctx.Deadline(); !ok {
			// no deadline from the caller: withDefault gave one attempt 5 s;
			// give the whole setup a minute before failing
			var cancelAll context.CancelFunc
			ctx, cancelAll = context.WithTimeout(ctx, time.Minute)
			defer cancelAll()
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

func transientSetupError(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) && api.Code == 503 {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}
