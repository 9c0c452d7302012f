package schenotify_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// TestBurstOfOneInstallationIsAllCreatedAndDelivered: 1000 reminders of
// one installation, added by 64 callers at once and all due in the same
// second, are all created and each delivered once. The adds of one
// installation share its index record; before the replica serialized its
// own index writes (store.go indexLocks), 64 concurrent compare-and-sets
// on it made some adds run out of retries and answer unavailable (the
// "lost" reminders of BenchmarkScheNotifyDelivery with one installation:
// never created, not lost in delivery).
func TestBurstOfOneInstallationIsAllCreatedAndDelivered(t *testing.T) {
	t.Parallel()
	const (
		n       = 1000
		callers = 64
	)
	e := newEnv(t)
	cfg := testConfig()
	cfg.Workers = callers // every add runs at once: the index is the only contention
	e.start(t, cfg, nil, nil, nil)
	a := bind("installation-a", 1)
	s := sess("bot", "person", "1")
	const conf = `{"language":"en_US","max_reminders":1000,"max_per_session":1000}`
	due := nextSecond().Add(25 * time.Second)
	var (
		mu      sync.Mutex
		refused []string
		wg      sync.WaitGroup
	)
	start := time.Now()
	work := make(chan int)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p, _ := json.Marshal(map[string]any{"message": "m" + strconv.Itoa(i), "time_str": rfc(due)})
				raw, err := e.call(t, bus.EndpointTool, "", &bus.Request{Binding: a, Config: json.RawMessage(conf),
					Tool: &bus.Tool{Name: schenotify.ToolSchedule, Parameters: p, Session: s}})
				var reply struct {
					Result struct{ Status, Code string }
				}
				if err == nil {
					err = json.Unmarshal(raw, &reply)
				}
				if err != nil || reply.Result.Status != "ok" {
					mu.Lock()
					refused = append(refused, fmt.Sprintf("%d: %s %v", i, reply.Result.Code, err))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	t.Logf("%d adds in %v", n, time.Since(start))
	if time.Now().After(due) {
		t.Fatalf("the adds overran the due second")
	}
	if len(refused) > 0 {
		t.Fatalf("%d of %d adds refused: %v", len(refused), n, refused)
	}
	e.host.wait(t, n, 60*time.Second)
	seen := map[string]int{}
	for _, c := range e.host.sends() {
		seen[c.Key]++
	}
	if len(seen) != n {
		t.Errorf("%d reminders delivered, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("%s delivered %d times", k, c)
		}
	}
}
