package takeover_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
)

// TestMaximumSizeEventsKeepTheServiceConnected (issue 33): eight events of
// the largest size the deployment's server takes (max_payload), sent at
// once by one installation over eight connections, while another
// installation sends 100 small events. The service's connection is never
// dropped (no disconnect, no slow-consumer error, server- or client-side),
// each big event is answered (served, or 503 at once beyond the
// installation's byte budget) and every event of the other installation
// is answered. With the
// server's default max_pending (64 MiB) against 32 MB messages, three
// queued for the service's connection made the server close it as a slow
// consumer, and the other installation's requests in flight were lost.
func TestMaximumSizeEventsKeepTheServiceConnected(t *testing.T) {
	srv := bustest.NewServerMaxPayload(t, 32<<20)
	var disconnects, slow atomic.Int64
	svcConn := srv.Conn(t,
		nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnects.Add(1) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrSlowConsumer) {
				slow.Add(1)
			}
		}))
	h := &harness{t: t, srv: srv}
	h.nc = svcConn
	h.js = srv.JetStream(t)
	h.hostC = srv.Conn(t)
	h.host = bustest.NewHost(t, h.hostC, wire.Subjects{})
	h.inv = bustest.NewInvoker(t, bus.NewInvoker(srv.Conn(t), wire.Subjects{}, nil), h.js, h.runners)
	h.svc = h.startReplica(svcConn)

	big, other := newBinding("big"), newBinding("other")
	h.attach(big, `{}`, true)
	h.attach(other, `{}`, true)
	// the largest event the server takes: two images filling max_payload
	// but for the envelope
	img := base64.StdEncoding.EncodeToString(make([]byte, (int(svcConn.MaxPayload())-64<<10)/2/4*3))
	chain, _ := json.Marshal([]map[string]string{
		{"type": "Image", "base64": "data:image/png;base64," + img},
		{"type": "Image", "base64": "data:image/png;base64," + img},
	})
	img = ""
	body, err := json.Marshal(&wire.Request{Binding: big, Config: json.RawMessage(`{}`),
		Event: &wire.Event{Name: "PersonNormalMessageReceived", BotUUID: "bot", Data: msgData("person", "big-1", "big-1", string(chain))}})
	if err != nil {
		t.Fatal(err)
	}
	subject := wire.Subjects{}.Invocation(takeover.Plugin, wire.EndpointEvent, bus.ScopeOf(big))
	if len(body) > int(svcConn.MaxPayload()) {
		t.Fatalf("event of %d bytes is over max_payload %d", len(body), svcConn.MaxPayload())
	}
	t.Logf("eight events of %d bytes", len(body))

	var wg sync.WaitGroup
	var bigErrs atomic.Int64
	var codes sync.Map // reply error code (or "ok"): count
	for i := range 8 {
		nc := srv.Conn(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := nats.NewMsg(subject)
			msg.Data = body
			msg.Header.Set(wire.HeaderInvocationID, fmt.Sprintf("big-%d-%d", i, time.Now().UnixNano()))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := nc.RequestMsgWithContext(ctx, msg)
			if err != nil {
				bigErrs.Add(1)
				return
			}
			code := res.Header.Get("Nats-Service-Error-Code")
			if code == "" {
				code = "ok"
			}
			n, _ := codes.LoadOrStore(code, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}()
	}
	var lost sync.Map
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.event(other, `{}`, "PersonNormalMessageReceived", "bot", msgData("person", fmt.Sprint("o-", i), "o", plain("hello"))); err != nil {
				lost.Store(i, err.Error())
			}
		}()
	}
	wg.Wait()
	n := 0
	lost.Range(func(k, v any) bool {
		n++
		if n <= 3 {
			t.Logf("other installation's event %v: %v", k, v)
		}
		return true
	})
	codes.Range(func(k, v any) bool {
		t.Logf("big events answered %v: %d", k, v.(*atomic.Int64).Load())
		return true
	})
	// each is answered, served or shed at once (503 over the installation's
	// byte budget), never left to the requester's timeout
	if n := bigErrs.Load(); n > 0 {
		t.Errorf("%d of 8 big events not answered, want 0", n)
	}
	if d, s := disconnects.Load(), slow.Load(); d > 0 || s > 0 {
		t.Errorf("the service's connection had %d disconnects and %d slow-consumer errors, want none", d, s)
	}
	if n > 0 {
		t.Errorf("%d of 100 events of the other installation lost", n)
	}
}
