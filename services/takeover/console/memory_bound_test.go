package console_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// liveHeap is the heap in use after two collections.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestOversizeIDsLeaveNoMemory posts ten replies whose sid is 20 MiB (the
// adversarial review's case) and 300 with short malformed sids, then checks
// that the console's per-key maps hold no entry for them and that the heap
// retained after collection grew by less than 16 MiB. It reports the
// figure.
func TestOversizeIDsLeaveNoMemory(t *testing.T) {
	h := newHarness(t)
	_, sc := h.install("mem", `{}`)
	tok := h.token(sc, "alice", time.Hour)
	post := func(tok string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/console/api/reply", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res.StatusCode
	}
	before := liveHeap()
	for i := range 10 {
		sid := strings.Repeat(string(rune('a'+i)), 20<<20)
		body, _ := json.Marshal(map[string]string{"sid": sid, "idempotency_key": "key-00000001", "text": "hi"})
		// A token may send two replies a second, checked before the body is
		// read: each oversize body comes with its own operator's token, so
		// the 400 from reading the sid is what is measured, however fast
		// the uploads go.
		if st := post(h.token(sc, "op-"+strconv.Itoa(i), time.Hour), body); st != http.StatusBadRequest {
			t.Fatalf("a 20 MiB sid: status %d, want 400", st)
		}
	}
	for i := range 300 {
		body, _ := json.Marshal(map[string]any{"sid": strings.Repeat("z", i+1), "idempotency_key": "key-00000001", "text": "hi"})
		st := post(tok, body)
		if st != http.StatusBadRequest && st != http.StatusTooManyRequests {
			t.Fatalf("a malformed sid: status %d, want 400 (or 429 from the token's rate)", st)
		}
	}
	after := liveHeap()
	grew := int64(after) - int64(before)
	t.Logf("heap retained after 10 replies with 20 MiB sids and 300 malformed sids: %+.1f MiB (%d -> %d bytes)", float64(grew)/(1<<20), before, after)
	if n := h.con.Entries()["replies"]; n != 0 {
		t.Errorf("the reply limiter holds %d keys after only malformed sids, want 0", n)
	}
	if grew > 16<<20 {
		t.Errorf("the heap retained %.1f MiB more after malformed sids, want < 16 MiB", float64(grew)/(1<<20))
	}
}
