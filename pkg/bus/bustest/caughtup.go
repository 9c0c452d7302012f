package bustest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// CaughtUp waits until the durable consumer of stream has handled every
// message stored so far on subject (the whole stream when subject is ""):
// its ack floor has reached the last one, or there is none, and nothing
// is pending or waiting for an ack.
//
// Idle counts alone are not enough: the server counts a stored message
// for a consumer a moment after the publish was acknowledged, so right
// after a publish the consumer may still report nothing pending.
func CaughtUp(t testing.TB, js jetstream.JetStream, stream, durable, subject string) {
	t.Helper()
	what := "consumer " + durable + " of " + stream + " caught up"
	if subject != "" {
		what += " on " + subject
	}
	Eventually(t, what, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ok, err := IsCaughtUp(ctx, js, stream, durable, subject)
		return err == nil && ok
	})
}

// IsCaughtUp is CaughtUp's check, made once.
func IsCaughtUp(ctx context.Context, js jetstream.JetStream, stream, durable, subject string) (bool, error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return false, err
	}
	c, err := js.Consumer(ctx, stream, durable)
	if err != nil {
		return false, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return false, err
	}
	if info.NumPending != 0 || info.NumAckPending != 0 {
		return false, nil
	}
	// The last message is read after the consumer's info: one stored
	// in between makes this round fail, never pass early.
	var last uint64
	if subject == "" {
		si, err := st.Info(ctx)
		if err != nil {
			return false, err
		}
		if si.State.Msgs == 0 {
			return true, nil
		}
		last = si.State.LastSeq
	} else {
		m, err := st.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		last = m.Sequence
	}
	return info.AckFloor.Stream >= last, nil
}
