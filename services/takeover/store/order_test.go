package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

// at is an entry named id, decided at ts and stored at stored (ms).
func at(id string, ts, stored int64) StoredEntry {
	return StoredEntry{Entry: model.Entry{ID: id, TS: ts}, Stored: stored}
}

func ids(es []StoredEntry) string {
	out := ""
	for _, e := range es {
		out += e.ID
	}
	return out
}

func TestInSendOrder(t *testing.T) {
	const budget = 200 * time.Millisecond
	corrupt := at("x", 0, 1300)
	corrupt.Corrupt = true
	for _, c := range []struct {
		name    string
		entries []StoredEntry
		want    string
	}{
		{"stream order when nothing is late", []StoredEntry{at("a", 1000, 1010), at("b", 1500, 1505), at("c", 2000, 2001)}, "abc"},
		// a stored 400 ms after its ts; b and c were sent after a's reply
		{"a late entry goes before what was sent after its reply", []StoredEntry{at("b", 1250, 1260), at("c", 1400, 1402), at("a", 1000, 1400)}, "abc"},
		// the held one's next message, queued behind it on the same replica, is late too
		{"late entries of one queue", []StoredEntry{at("0", 900, 901), at("4", 1900, 1901), at("1", 1000, 2000), at("2", 1300, 2001), at("3", 1600, 2002)}, "01234"},
		// b precedes the late a in time by less than half a budget: clock
		// skew or a concurrent sender, so stream order stands
		{"within half a budget the stream decides", []StoredEntry{at("b", 1090, 1100), at("a", 1000, 1300)}, "ba"},
		// a clock set back does not reorder what was stored on time
		{"clock set back", []StoredEntry{at("a", 5000, 1000), at("b", 1100, 1100), at("c", 1200, 1200)}, "abc"},
		{"a corrupt entry is never passed", []StoredEntry{at("b", 1250, 1260), corrupt, at("a", 1000, 1400)}, "bxa"},
		{"unknown store time", []StoredEntry{at("b", 1250, 1260), at("a", 1000, 0)}, "ba"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ids(InSendOrder(c.entries, budget)); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

// Every message a sender sends after the reply to a late one is decided at
// least a budget later, whatever the replicas did: its history comes out in
// send order for any interleaving of two replicas' stores.
func TestInSendOrderOneSender(t *testing.T) {
	const budget = 200 * time.Millisecond
	// messages 0..5; odd ones late (stored after the next two), even ones on time
	for shift := range 3 {
		var stream []StoredEntry
		var lateOnes []StoredEntry
		ts := int64(1000)
		for i := range 6 {
			if i%2 == 1 {
				lateOnes = append(lateOnes, at(fmt.Sprint(i), ts, ts+int64(shift+1)*500))
				ts += 200 + 5 // the reply went at the budget
				continue
			}
			stream = append(stream, at(fmt.Sprint(i), ts, ts+2))
			ts += 10
		}
		stream = append(stream, lateOnes...)
		if got := ids(InSendOrder(stream, budget)); got != "012345" {
			t.Fatalf("shift %d: got %s", shift, got)
		}
	}
}
