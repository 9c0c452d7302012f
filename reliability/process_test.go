package reliability_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// proc is one service replica running as its own process.
type proc struct {
	plugin string
	name   string
	cmd    *exec.Cmd
	addr   string // health and metrics
	out    *bustest.LogBuffer
	exited chan struct{}
}

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// spawn starts a replica of plugin as a process connected to natsURL and
// waits until its /readyz answers 200. A replica that exits because its
// HTTP port was taken between freeAddr and its bind (another test's
// listener) is started again on a new address, at most twice.
func (s *stack) spawn(t testing.TB, plugin, name, natsURL string) *proc {
	t.Helper()
	var p *proc
	for range 3 {
		var taken bool
		if p, taken = s.startProc(t, plugin, name, natsURL); !taken {
			return p
		}
	}
	t.Fatalf("%s exited: %s", name, p.out.String())
	return nil
}

// startProc is one attempt of spawn; taken reports that the process exited
// on an address already in use.
func (s *stack) startProc(t testing.TB, plugin, name, natsURL string) (p *proc, taken bool) {
	t.Helper()
	dir := binaries(t)
	p = &proc{plugin: plugin, name: name, addr: freeAddr(t), out: &bustest.LogBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(dir, plugin))
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TZ=UTC",
		"NATS_URL=" + natsURL, "LANGBOT_HTTP_ADDR=" + p.addr, "LANGBOT_STATE_KEY=" + s.keyStr,
		"LANGBOT_LOG_LEVEL=warn", "GITHUB_ALLOW_PRIVATE_NETWORKS=true", "GITHUB_ALLOW_HTTP=true"}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
			t.Errorf("%s did not stop on SIGTERM", name)
		}
	})
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.exited:
			if strings.Contains(p.out.String(), "address already in use") {
				return p, true
			}
			t.Fatalf("%s exited: %s", name, p.out.String())
		default:
		}
		resp, err := client.Get("http://" + p.addr + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, false
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready: %v\n%s", name, err, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// invocations sums langbot_invocations_total on the replica's /metrics.
func (p *proc) invocations(t testing.TB) float64 {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatalf("%s metrics: %v", p.name, err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "langbot_invocations_total{") {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		sum += v
	}
	return sum
}

// retryable reports whether the host retries an invocation that failed
// with err (under the same invocation id): no answer, 5xx, 409 in progress
// and 429.
func retryable(err error) bool {
	var be *wire.Error
	if !errors.As(err, &be) {
		return true // timeout, no responders: outcome unknown
	}
	return be.Code >= 500 || be.Code == 409 || be.Code == 429
}

// loadResult is what one service's load saw.
type loadResult struct {
	acked, retries, failedAttempts int64
	newIDs                         int64 // "unavailable" tool results retried as a new call
	lost, duplicated               int
	hostDuplicates                 int // sends the host got twice under one idempotency key (allowed)
	survivorBefore, survivorAfter  float64
	elapsed                        time.Duration
}

// TestKillReplicaUnderLoad runs two replicas of each service as separate
// processes, drives a steady load of state-changing invocations with
// invocation ids (the host retrying failed or timed-out ones under the same
// id, as LangBot does), SIGKILLs one replica of each service a third of the
// way through, and checks that every acknowledged effect is stored exactly
// once, that work continues on the survivor, and reports lost and
// duplicated effects (both must be 0).
func TestKillReplicaUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs service processes")
	}
	srv := bustest.NewServer(t)
	s := newStack(t, srv.Conn(t))
	// ops stay under the per-installation caps (50 repositories, 50
	// reminders per session)
	workers, ops, cycles := 4, 25, 1
	if soak() {
		workers, ops, cycles = 8, 45, 3
	}
	results := map[string]*loadResult{}
	var mu sync.Mutex
	for _, plugin := range plugins {
		t.Run(plugin, func(t *testing.T) {
			t.Parallel()
			r := s.killUnderLoad(t, plugin, srv.URL(), workers, ops, cycles)
			mu.Lock()
			results[plugin] = r
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		for _, p := range plugins {
			if r := results[p]; r != nil {
				t.Logf("FIGURE kill-9 %s: %d kills, %d effects acknowledged, %d lost, %d duplicated, %d host-side retries (%d failed attempts), %d duplicate host sends under one key, survivor served %.0f invocations after the kill, %v",
					p, cycles, r.acked, r.lost, r.duplicated, r.retries, r.failedAttempts, r.hostDuplicates, r.survivorAfter-r.survivorBefore, r.elapsed.Round(time.Millisecond))
			}
		}
	})
}

func (s *stack) killUnderLoad(t *testing.T, plugin, natsURL string, workers, ops, cycles int) *loadResult {
	ins := make([]*install, workers)
	for w := range ins {
		ins[w] = s.newInstall(fmt.Sprintf("kill-%s-%d", plugin, w))
		s.publishAttach(ins[w], plugin, true)
	}
	reps := []*proc{s.spawn(t, plugin, plugin+"-a", natsURL), s.spawn(t, plugin, plugin+"-b", natsURL)}
	s.waitLifecycle(plugin)
	if plugin == takeover.Plugin {
		for _, in := range ins {
			if _, err := s.message(in, s.newID(), "u1", "hello"); err != nil {
				t.Fatal(err)
			}
		}
	}
	res := &loadResult{}
	start := time.Now()
	total := int64(workers * ops)
	var acked atomic.Int64
	keys := make([][]string, workers) // acknowledged effect keys per worker
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range ops {
				key := fmt.Sprintf("op-%s-%02d-%03d", plugin, w, k)
				if err := s.opWithRetries(plugin, ins[w], key, res); err != nil {
					errs <- fmt.Errorf("%s: %w", key, err)
					return
				}
				keys[w] = append(keys[w], key)
				acked.Add(1)
			}
		}()
	}
	// kill a replica each time another share of the load is acknowledged;
	// after a kill the victim comes back (soak runs several cycles)
	victim := 0
	for c := range cycles {
		bustest.EventuallyWithin(t, 5*time.Minute, "load progress", func() bool { return acked.Load() >= total*int64(c+1)/int64(cycles+2) })
		survivor := reps[1-victim]
		res.survivorBefore += survivor.invocations(t)
		reps[victim].kill(t)
		bustest.EventuallyWithin(t, 5*time.Minute, "load progress after the kill", func() bool {
			return acked.Load() >= total*int64(c+2)/int64(cycles+2) || acked.Load() == total
		})
		res.survivorAfter += survivor.invocations(t)
		if c+1 < cycles {
			reps[victim] = s.spawn(t, plugin, fmt.Sprintf("%s-r%d", plugin, c), natsURL)
			victim = 1 - victim
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	res.acked = acked.Load()
	res.elapsed = time.Since(start)
	res.lost, res.duplicated, res.hostDuplicates = s.countEffects(t, plugin, ins, keys)
	if res.acked != total || res.lost != 0 || res.duplicated != 0 {
		t.Errorf("%s: %d of %d acknowledged, %d lost, %d duplicated", plugin, res.acked, total, res.lost, res.duplicated)
	}
	if res.survivorAfter <= res.survivorBefore {
		t.Errorf("%s: the survivor served nothing after the kill", plugin)
	}
	return res
}

// opWithRetries performs one state-changing invocation whose effect is
// named key, retrying under the same invocation id until it is answered.
//
// A tool result saying the service is unavailable is a final 2xx answer:
// the host does not retry it, the model calls the tool again, which is a new
// invocation (new id). That is what this does too.
func (s *stack) opWithRetries(plugin string, in *install, key string, res *loadResult) error {
	id := "inv-" + key
	deadline := time.Now().Add(3 * time.Minute)
	// a retry resends the same body: the due time is fixed once
	due := time.Now().Add(2 * time.Hour)
	if s.dueIn > 0 {
		due = time.Now().Add(s.dueIn)
	}
	for attempt := 0; ; attempt++ {
		err := s.op(plugin, in, id, key, due)
		if err == nil {
			if attempt > 0 {
				atomic.AddInt64(&res.retries, 1)
			}
			return nil
		}
		atomic.AddInt64(&res.failedAttempts, 1)
		if errors.Is(err, errToolUnavailable) {
			atomic.AddInt64(&res.newIDs, 1)
			id = fmt.Sprintf("inv-%s-again-%d", key, attempt)
		} else if !retryable(err) {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// errToolUnavailable is a tool result with code "unavailable".
var errToolUnavailable = errors.New("tool result: unavailable")

// op is one invocation with a short timeout, as a host attempt.
func (s *stack) op(plugin string, in *install, id, key string, due time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var req *wire.Request
	var ep wire.Endpoint
	switch plugin {
	case schenotify.Plugin:
		p, _ := json.Marshal(map[string]any{"message": key, "time_str": due.UTC().Format(time.RFC3339)})
		ep, req = wire.EndpointTool, &wire.Request{Binding: in.b[plugin], Config: in.cfg[plugin],
			Tool: &wire.Tool{Name: schenotify.ToolSchedule, Parameters: p, Session: in.sess}}
	case githubkit.Plugin:
		ep, req = wire.EndpointCommand, &wire.Request{Binding: in.b[plugin], Config: in.cfg[plugin],
			Command: &wire.Command{Name: "gh", Params: []string{"sub", "acme/" + key}, FullText: "!gh sub acme/" + key,
				Prefix: "!", Session: in.sess, Privilege: 1}}
	case takeover.Plugin:
		body, _ := json.Marshal(map[string]string{"sid": in.sid("u1"), "idempotency_key": key, "text": key})
		ep, req = wire.EndpointPage, &wire.Request{Binding: in.b[plugin], Config: in.cfg[plugin],
			Page: &wire.Page{PageID: "console", Endpoint: "/reply", Method: "POST", Body: body}}
	}
	raw, err := s.inv.Invoke(ctx, plugin, ep, id, req)
	if err != nil {
		return err
	}
	switch plugin {
	case schenotify.Plugin:
		var r struct {
			Result struct {
				Status string `json:"status"`
				Code   string `json:"code"`
			} `json:"result"`
		}
		if json.Unmarshal(raw, &r) == nil && r.Result.Code == "unavailable" {
			return errToolUnavailable
		}
		if json.Unmarshal(raw, &r) != nil || r.Result.Status != "ok" {
			return fmt.Errorf("not scheduled: %s", raw)
		}
	case takeover.Plugin:
		var r struct {
			Data takeover.ReplyResult `json:"data"`
		}
		if json.Unmarshal(raw, &r) != nil || !r.Data.Delivered {
			return fmt.Errorf("not delivered: %s", raw)
		}
		if !r.Data.Saved {
			// delivered, not saved (spec/takeover.md 7.4 step 7): the
			// operator is told; the effect is the delivery alone
			s.notSaved.Store(key, true)
		}
	}
	return nil
}

// countEffects counts the stored effects of the acknowledged keys: lost
// (absent) and duplicated (present more than once), plus the host sends
// received more than once under one idempotency key.
func (s *stack) countEffects(t *testing.T, plugin string, ins []*install, keys [][]string) (lost, dup, hostDup int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for w, in := range ins {
		seen := map[string]int{}
		switch plugin {
		case schenotify.Plugin, githubkit.Plugin:
			kv, err := s.js.KeyValue(ctx, bus.Bucket(plugin))
			if err != nil {
				t.Fatal(err)
			}
			lister, err := kv.ListKeysFiltered(ctx, in.scope(plugin).String()+".>")
			if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
				t.Fatal(err)
			}
			var ks []string
			if lister != nil {
				for k := range lister.Keys() {
					ks = append(ks, k)
				}
			}
			for _, k := range ks {
				e, err := kv.Get(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				if plugin == schenotify.Plugin {
					var r schenotify.Record
					if json.Unmarshal(e.Value(), &r) == nil && strings.HasPrefix(r.Message, "op-") {
						seen[r.Message]++
					}
					continue
				}
				var r githubkit.RepoRecord
				if json.Unmarshal(e.Value(), &r) == nil && r.FullName != "" {
					seen[strings.TrimPrefix(strings.ToLower(r.FullName), "acme/")] += len(r.Subscribers)
				}
			}
		case takeover.Plugin:
			var page takeover.MessagePage
			// right after a leader election the read may get 503 for a moment
			var err error
			for deadline := time.Now().Add(30 * time.Second); ; {
				err = s.page(in, s.newID(), "GET", "/messages", map[string]any{"sid": in.sid("u1"), "limit": 200}, &page)
				if err == nil || !isCode(err, 503) || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Messages {
				for _, p := range e.Parts {
					if strings.HasPrefix(p.Text, "op-") {
						seen[p.Text]++
					}
				}
			}
			perKey := map[string]int{}
			for _, c := range s.host.Sends() {
				if c.Scope == in.scope(plugin) {
					perKey[c.IdempotencyKey]++
					if i := strings.LastIndex(c.IdempotencyKey, ":"); i >= 0 {
						if _, ok := s.notSaved.Load(c.IdempotencyKey[i+1:]); ok {
							seen[c.IdempotencyKey[i+1:]] = perKey[c.IdempotencyKey]
						}
					}
				}
			}
			for _, n := range perKey {
				hostDup += n - 1
			}
		}
		for _, k := range keys[w] {
			switch n := seen[strings.ToLower(k)]; {
			case n == 0:
				lost++
				if plugin == takeover.Plugin {
					t.Logf("lost reply %s: %s", k, s.replyTrace(ctx, in, k))
				}
			case n > 1:
				dup += n - 1
			}
		}
	}
	return lost, dup, hostDup
}

// replyTrace describes where an operator reply's traces are: its entries in
// the history stream (any gen), the session's gen and the host sends under
// its key, so a lost reply in a failure can be told from a hidden one.
func (s *stack) replyTrace(ctx context.Context, in *install, key string) string {
	sc := in.scope(takeover.Plugin)
	sid := in.sid("u1")
	_, stream, subject := store.HistoryOf(wire.Subjects{}, sc, sid)
	var b strings.Builder
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return err.Error()
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return err.Error()
	}
	n := int(cons.CachedInfo().NumPending)
	fmt.Fprintf(&b, "%d entries in %s;", n, stream)
	if n > 0 {
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
		if err == nil {
			for m := range batch.Messages() {
				if strings.Contains(string(m.Data()), key) {
					md, _ := m.Metadata()
					fmt.Fprintf(&b, " stored at seq %d: %.200s;", md.Sequence.Stream, m.Data())
				}
			}
		}
	}
	var page takeover.MessagePage
	if err := s.page(in, s.newID(), "GET", "/messages", map[string]any{"sid": sid, "limit": 1}, &page); err == nil {
		fmt.Fprintf(&b, " session gen %s;", page.Session.Gen)
	}
	for _, c := range s.host.Sends() {
		if c.Scope == sc && strings.HasSuffix(c.IdempotencyKey, ":"+key) {
			b.WriteString(" sent once;")
		}
	}
	return b.String()
}
