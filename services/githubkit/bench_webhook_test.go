package githubkit_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/githubkit"
)

// BenchmarkWebhookPush is the webhook figure: signed push
// deliveries POSTed to the receiver at 100 per second, each timed from the
// start of its POST to the host's receipt of its send_message, next to the
// JetStream publish floor of the same run (the receiver records each
// delivery with one such publish). GITHUBKIT_BENCH_DELIVERIES sets the
// deliveries per iteration (default 1000, i.e. 10 s).
func BenchmarkWebhookPush(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("GITHUBKIT_BENCH_DELIVERIES")); err == nil && v > 0 {
		n = v
	}
	const rate = 100
	srv := bustest.NewBenchServer(b)
	floor := bustest.MeasureFloor(b, srv, 300)
	h := newBenchHarness(b, srv)
	// The push budget (ten messages a minute per chat by default) holds
	// a burst back on purpose; the benchmark measures the path of a
	// delivery, so its one chat and webhook may take the whole burst.
	r := h.start(githubkit.Config{WebhookURL: hookBase, Pushes: githubkit.PushBudget{ChatBurst: n, HookBurst: n}}, nil)
	a := newInst(b, "bench", h.baseConfig("en_US", "token", 120))
	h.attach(a, true)
	hs := httptest.NewServer(r.svc.WebhookHandler())
	b.Cleanup(hs.Close)
	e := &hookEnv{harness: h, a: a, svc: r.svc, srv: hs}
	e.cmd(a, "sub "+hw+" push")
	id, secret := e.hook(hw)
	client := hs.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64

	var lat []time.Duration
	b.ResetTimer()
	for it := range b.N {
		h.host.Reset()
		starts := make(map[string]time.Time, n)
		var mu sync.Mutex
		var wg sync.WaitGroup
		tick := time.NewTicker(time.Second / rate)
		for i := range n {
			<-tick.C
			guid := fmt.Sprintf("bench-%d-%d", it, i)
			body := pushBody(fmt.Sprintf("%040x", it*n+i+1))
			sig := "sha256=" + hex.EncodeToString(githubkit.Sign([]byte(secret), body))
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, hs.URL+githubkit.WebhookPath+id, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "push")
				req.Header.Set("X-GitHub-Delivery", guid)
				req.Header.Set("X-Hub-Signature-256", sig)
				mu.Lock()
				starts[guid] = time.Now()
				mu.Unlock()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					b.Errorf("delivery %s: %d", guid, resp.StatusCode)
				}
			}()
		}
		tick.Stop()
		wg.Wait()
		sends := h.host.WaitSends(b, n, 60*time.Second)
		for _, s := range sends {
			guid := s.IdempotencyKey[strings.LastIndex(s.IdempotencyKey, ":")+1:]
			if st, ok := starts[guid]; ok {
				lat = append(lat, s.At.Sub(st))
			}
		}
		if len(sends) != n {
			b.Fatalf("%d sends for %d deliveries", len(sends), n)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	b.ReportMetric(float64(p(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(floor.JSPub.P50.Microseconds())/1000, "floor-jspub-p50-ms")
	b.ReportMetric(float64(floor.JSPub.P99.Microseconds())/1000, "floor-jspub-p99-ms")
	b.ReportMetric(float64(p(0.99))/float64(max(floor.JSPub.P99, 1)), "p99/floor-jspub-p99")
}
