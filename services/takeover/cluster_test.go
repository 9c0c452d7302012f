package takeover_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

func TestFailSafeWhenStorageDown(t *testing.T) {
	if testing.Short() {
		t.Skip("three-node cluster")
	}
	c := bustest.NewCluster(t, 3)
	c.WaitLeader(t)
	srv := c.Servers[0]
	h := &harness{t: t, srv: srv}
	h.nc = srv.Conn(t)
	h.js = srv.JetStream(t)
	h.host = bustest.NewHost(t, srv.Conn(t), wire.Subjects{})
	h.inv = bustest.NewInvoker(t, bus.NewInvoker(srv.Conn(t), wire.Subjects{}, nil), h.js, nil)
	reg := prometheus.NewRegistry()
	h.regs = append(h.regs, reg)
	svc, err := takeover.New(takeover.Config{Replicas: 3}, bus.Deps{Conn: h.nc, Clock: h.now, Registerer: reg, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	// not bustest.Start: after the quorum loss below the shutdown's last
	// writes may fail, and Run's error is not what this test checks
	t.Cleanup(func() { cancel(); <-done })
	bustest.EventuallyWithin(t, bustest.ReadyTimeout, "replica ready", svc.Ready)
	h.svc = svc
	b := newBinding("dec4")
	h.attach(b, `{}`, true)
	sid := h.takeOver(b, `{}`, "bot-a", 1)
	h.mustEvent(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", 2, 2, plain("free")))
	// the followers hold the records before the quorum goes
	bustest.Eventually(t, "replication", func() bool {
		for _, s := range c.Servers[1:] {
			js := s.JetStream(t)
			kv, err := js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
			if err != nil {
				return false
			}
			sc, _ := b.Scope()
			key, _ := bus.Key(sc, "session", sid)
			e, err := kv.Get(context.Background(), key)
			if err != nil {
				return false
			}
			var r model.Record
			if json.Unmarshal(e.Value(), &r) != nil || !r.Takeover.Active {
				return false
			}
		}
		return true
	})
	kv, err := h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := b.Scope()
	key, _ := bus.Key(sc, "session", sid)
	takeover.StopView(svc) // decide without the view: direct read, then fallback
	c.Servers[1].Stop()
	c.Servers[2].Stop()
	// the surviving follower serves direct gets without quorum once it
	// notices its peers are gone
	bustest.Eventually(t, "direct gets on the surviving node", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := kv.Get(ctx, key)
		return err == nil
	})
	for _, lid := range []int{1, 2} {
		r, err := h.event(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, plain("x")))
		if err != nil {
			t.Fatal(err)
		}
		if r.PreventDefault != (lid == 1) {
			t.Fatalf("session %d: blocked=%v", lid, r.PreventDefault)
		}
	}
	// a loaded machine may miss the 250 ms read budget: then the fallback
	// decides, which must agree; the view never does (it is stopped)
	direct := h.metric("takeover_decisions_total", map[string]string{"path": "direct"})
	fallback := h.metric("takeover_decisions_total", map[string]string{"path": "fallback"})
	if direct+fallback != 2 {
		t.Fatalf("paths: direct %v, fallback %v", direct, fallback)
	}
	t.Logf("paths without quorum: direct %v, fallback %v", direct, fallback)
	base := fallback
	takeover.SetFault(svc, func(op string, _ binding.Scope) error {
		if op == "kv.get" {
			return errors.New("no quorum")
		}
		return nil
	})
	for _, lid := range []int{1, 2} {
		r, err := h.event(b, `{}`, takeover.EventPersonMessage, "bot-a", msgData("person", lid, lid, plain("x")))
		if err != nil {
			t.Fatal(err)
		}
		if r.PreventDefault != (lid == 1) {
			t.Fatalf("fallback session %d: blocked=%v", lid, r.PreventDefault)
		}
	}
	if h.metric("takeover_decisions_total", map[string]string{"path": "fallback"})-base != 2 {
		t.Fatal("fallback path not taken")
	}
}
