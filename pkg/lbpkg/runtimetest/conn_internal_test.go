package runtimetest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzFraming: whatever a message holds, what send writes, read gives back
// as the same message (chunked above 16 KiB or not), and read survives any
// bytes on the runtime's stdout.
func FuzzFraming(f *testing.F) {
	f.Add("pong", []byte(`{"seq_id":1,"code":0}`+"\n"))
	f.Add(strings.Repeat("λx", 9000), []byte(`{"type":"chunk_start","total_size":3}`+"\n"+`{"type":"chunk_data","data":"{}","offset":0}`+"\n"))
	f.Add("line\nbreak \u2028 \"quoted\"", []byte(`{"type":"chunk_end"}`+"\n"+`{"seq_id":"x","action":7}`+"\n"))
	f.Add(strings.Repeat("a", chunkSize-40), []byte("\n\n{\n"))
	f.Fuzz(func(t *testing.T, text string, junk []byte) {
		// The oracle: encoding/json's own round trip of the text (invalid
		// UTF-8 becomes U+FFFD on the way).
		var want string
		raw, _ := json.Marshal(text)
		_ = json.Unmarshal(raw, &want)

		var wire bytes.Buffer
		w := newConn(&wire, nil)
		if err := w.send(response{SeqID: 987654321, Code: 1, Message: text, Data: json.RawMessage(`{}`), ChunkStatus: statusContinue}); err != nil {
			t.Fatal(err)
		}
		if len(raw) > chunkSize && !bytes.HasPrefix(wire.Bytes(), []byte(`{"total_size":`)) {
			t.Fatalf("a %d-byte message went unchunked", len(raw))
		}
		ch := make(chan response, 1)
		r := newConn(&bytes.Buffer{}, func(request) response { return fail("no") })
		r.pending[987654321] = ch
		input := append(append(append([]byte{}, junk...), '\n'), wire.Bytes()...)
		go r.read(bytes.NewReader(input))
		select {
		case <-r.done: // the input is finite: read ends, after delivering
		case <-time.After(5 * time.Second):
			t.Fatal("read hung")
		}
		select {
		case got := <-ch:
			if got.Message != want || got.Code != 1 {
				t.Fatalf("got %q code %d, want %q", got.Message, got.Code, want)
			}
		default:
			// junk may have opened a chunked message that swallowed ours
			// (a chunk_start without an end): only then may nothing arrive.
			if !bytes.Contains(junk, []byte("chunk_start")) {
				t.Fatal("message lost")
			}
		}
		r.wg.Wait()
	})
}
