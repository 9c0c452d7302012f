package takeover_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
)

// BenchmarkAlertLatency measures, for one installation with two operator
// chats (issue 20: "one alert per operator chat within a second"), the time
// from a trigger word's event to the second operator chat's alert at the
// simulated host, one chat asking at a time, and reports p50/p99 next to
// the bus floor of the same run. The alert goes through the alert
// consumer (a JetStream work item) and the host client, so its floor is a
// JetStream publish plus a request/reply; ratios are to those. 200 chats
// keep it near 10 s of make bench.
func BenchmarkAlertLatency(b *testing.B) {
	const chats = 200
	h := newHarnessOn(b, bustest.NewBenchServer(b))
	floor := bustest.MeasureFloor(b, h.srv, 2000)
	floor.Report(b)
	bnd := newBinding("alert-bench")
	h.attach(bnd, opConfig, true)
	alerts := func() int { return len(alertsTo(h, bnd)["group:900"]) + len(alertsTo(h, bnd)["person:77"]) }
	lat := make([]time.Duration, 0, chats)
	for i := range chats {
		before := alerts()
		t0 := time.Now()
		h.mustEvent(bnd, opConfig, takeover.EventPersonMessage, "bot-a", msgData("person", fmt.Sprint(5000+i), fmt.Sprint(5000+i), plain("help please")))
		deadline := t0.Add(30 * time.Second)
		for alerts() < before+2 {
			if time.Now().After(deadline) {
				b.Fatalf("chat %d: %d of 2 alerts after 30 s", i, alerts()-before)
			}
			time.Sleep(100 * time.Microsecond)
		}
		var last time.Time
		for _, calls := range alertsTo(h, bnd) {
			if at := calls[len(calls)-1].At; at.After(last) {
				last = at
			}
		}
		lat = append(lat, last.Sub(t0))
	}
	p50, p99 := bustest.Percentile(lat, 50), bustest.Percentile(lat, 99)
	floorOne := floor.JSPub.P50 + floor.Echo.P50
	b.ReportMetric(float64(p50.Microseconds()), "alert-p50-us")
	b.ReportMetric(float64(p99.Microseconds()), "alert-p99-us")
	b.ReportMetric(float64(p50)/float64(floorOne), "alert-p50/floor")
	b.ReportMetric(float64(p99)/float64(floorOne), "alert-p99/floor")
	b.Logf("FIGURE alert: %d triggers, trigger event to both operator chats' alerts p50 %v p99 %v; floor (JetStream publish p50 %v + echo p50 %v) %v; p99 %.0fx the floor (goal: within 1 s)",
		chats, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), floor.JSPub.P50, floor.Echo.P50, floorOne, float64(p99)/float64(floorOne))
}
