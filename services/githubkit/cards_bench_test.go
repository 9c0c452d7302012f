package githubkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/busbench"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// BenchmarkCardEvent is the event answer of a message with a GitHub link
// (parse, queue, reply: LangBot waits for it), one at a time and 32 in
// flight, next to the bus echo floor of the same run. The cards
// themselves go out later and are not in the figure.
func BenchmarkCardEvent(b *testing.B) {
	srv := bustest.NewBenchServer(b)
	floor := bustest.MeasureFloor(b, srv, 2000)
	h := newBenchHarness(b, srv)
	h.start(githubkit.Config{}, nil)
	in := newInst(b, "bench", h.baseConfig("en_US", "tok", 120))
	h.attach(in, true)
	var n atomic.Int64
	op := func() error {
		i := n.Add(1)
		data, _ := json.Marshal(map[string]any{"launcher_type": "group", "launcher_id": fmt.Sprint("g", i%100), "sender_id": "u1",
			"message_chain": []map[string]any{{"type": "Plain", "text": "see https://github.com/octocat/Hello-World/issues/1347 please"}}})
		req := &wire.Request{Binding: in.b, Config: in.config(), Event: &wire.Event{Name: githubkit.EventGroupMessage, BotUUID: "bot-1", Data: data}}
		_, err := h.invoker.Invoke(context.Background(), githubkit.Plugin, wire.EndpointEvent, fmt.Sprint("inv-", i), req)
		return err
	}
	b.ResetTimer()
	r, err := busbench.Measure(max(b.N, 2000), 32, op)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(r.P50.Microseconds()), "event-p50-us")
	b.ReportMetric(float64(r.P99.Microseconds()), "event-p99-us")
	b.ReportMetric(r.RateN, "events/s@32")
	b.ReportMetric(float64(r.P50)/float64(floor.Echo.P50), "p50/echo")
	b.Logf("card event p50 %v p99 %v, %.0f/s@32; floor %s", r.P50, r.P99, r.RateN, floor)
}
