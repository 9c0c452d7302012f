package takeover_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// BenchmarkTakeoverRelay drives user messages open loop at
// TAKEOVER_RELAY_RATE events/s (default 1000) into 20 chats, each relayed
// to its own private operator chat (issue 31), with durable recording, and
// reports how long a message takes from the event's request to the
// forwarded send_message arriving at the simulated host (p50/p99), the
// decision p99 of the same events, and the event reply p99, next to the
// floor of the same run: bare durable JetStream publishes at the same
// rate, open loop, for as long. Each run lasts TAKEOVER_BENCH_SECONDS
// (default 5).
func BenchmarkTakeoverRelay(b *testing.B) {
	secs := 5
	if v, err := strconv.Atoi(os.Getenv("TAKEOVER_BENCH_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	rate := 1000
	if v, err := strconv.Atoi(os.Getenv("TAKEOVER_RELAY_RATE")); err == nil && v > 0 {
		rate = v
	}
	h := newHarnessOn(b, bustest.NewBenchServer(b))
	const chats = 20 // operator_chats holds at most 20
	var ops []string
	for i := range chats {
		ops = append(ops, fmt.Sprintf("op-bot:person:%d", 9000+i))
	}
	opsJSON, _ := json.Marshal(ops)
	cfg := fmt.Sprintf(`{"takeover_timeout":3600,"trigger_words":["human"],"auto_takeover_on_trigger":false,"operator_chats":%s}`, opsJSON)
	bnd := newBinding("bench-relay")
	h.attach(bnd, cfg, true)
	// operator chat i relays user chat i: the user asks, becomes the
	// newest chat of the list, and operator i takes number 1
	for i := range chats {
		h.clock.Advance(time.Second)
		h.mustEvent(bnd, cfg, takeover.EventPersonMessage, "bench-bot", msgData("person", 100000+i, 100000+i, plain("a human please")))
		sid := sidOf("bench-bot", "person", 100000+i)
		bustest.Eventually(b, "unread", func() bool { r := h.record(bnd, sid); return r != nil && r.Unread })
		op := wire.Session{LauncherType: "person", LauncherID: wire.ID(strconv.Itoa(9000 + i)), SenderID: "7", BotUUID: "op-bot"}
		h.command(bnd, cfg, 1, op, "!ho list")
		if got := h.command(bnd, cfg, 1, op, "!ho take 1"); !strings.Contains(got, "Relay on") {
			b.Fatalf("take: %q", got)
		}
	}

	var dmu sync.Mutex
	var decisions []time.Duration
	takeover.ObserveDecisions(h.svc, func(d time.Duration) {
		dmu.Lock()
		decisions = append(decisions, d)
		dmu.Unlock()
	})
	sc, _ := bnd.Scope()
	subject := wire.Subjects{}.Invocation(takeover.Plugin, wire.EndpointEvent, sc)
	cli := h.srv.Conn(b)
	var sent sync.Map // message number -> time.Time the request left
	send := func(i int) error {
		c := i % chats
		data, _ := json.Marshal(&wire.Request{Binding: bnd, Config: json.RawMessage(cfg), Event: &wire.Event{
			Name: takeover.EventPersonMessage, BotUUID: "bench-bot",
			Data: msgData("person", 100000+c, 100000+c, plain("relay-msg-"+strconv.Itoa(i)+" hello there")),
		}})
		msg := &nats.Msg{Subject: subject, Header: nats.Header{}, Data: data}
		msg.Header.Set(wire.HeaderInvocationID, bus.NewInvocationID())
		sent.Store(i, time.Now())
		_, err := cli.RequestMsg(msg, 10*time.Second)
		return err
	}
	wf := bustest.NewWriteFloor(b, h.srv, bustest.WriteFloorConfig{Subjects: chats, Size: 300, Shards: store.HistoryShards})
	b.ResetTimer()
	fp50, fp99, ferrs, _ := wf.Run(rate, time.Duration(secs)*time.Second)
	before := len(h.host.Sends())
	lat, errs := bustest.OpenLoop(rate, time.Duration(secs)*time.Second, send)
	// every forwarded message has arrived, or the run reports the missing
	want := len(lat)
	arrived := func() (out []time.Duration) {
		for _, c := range h.host.Sends()[before:] {
			m := c.SendMessage()
			if m.BotUUID != "op-bot" || len(m.MessageChain) == 0 {
				continue
			}
			t := m.MessageChain[0].Text
			k := strings.Index(t, "relay-msg-")
			if k < 0 {
				continue
			}
			f := strings.Fields(t[k+len("relay-msg-"):])
			n, _ := strconv.Atoi(f[0])
			if t0, ok := sent.Load(n); ok {
				out = append(out, c.At.Sub(t0.(time.Time)))
			}
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	var fwd []time.Duration
	for {
		fwd = arrived()
		if len(fwd) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.StopTimer()
	dmu.Lock()
	dp99 := bustest.Percentile(decisions, 99)
	dmu.Unlock()
	p50, p99 := bustest.Percentile(fwd, 50), bustest.Percentile(fwd, 99)
	rp99 := bustest.Percentile(lat, 99)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.Logf("rate %d/s for %ds: %d events, %d errors, %d forwarded; forward p50 %v p99 %v; decision p99 %v; reply p99 %v; floor (JS publish, open loop) p50 %v p99 %v, %d errors; forward/floor p99 %.2fx",
		rate, secs, len(lat), errs, len(fwd), p50, p99, dp99, rp99, fp50, fp99, ferrs, float64(p99)/float64(fp99))
	b.ReportMetric(us(p50), "forward-p50-us")
	b.ReportMetric(us(p99), "forward-p99-us")
	b.ReportMetric(us(dp99), "decision-p99-us")
	b.ReportMetric(us(rp99), "reply-p99-us")
	b.ReportMetric(us(fp99), "floor-pub-p99-us")
	b.ReportMetric(float64(p99)/float64(fp99), "forward/floor-p99")
	if len(fwd) < want {
		b.Errorf("%d of %d messages forwarded", len(fwd), want)
	}
}
