package store

import "time"

// InSendOrder puts a session's entries, read in stream order, in the order
// their messages were sent (spec §3.3, ST-3), and returns them; it reorders
// entries in place.
//
// The stream's order is that order but for one case. An event's reply waits
// for the append of its entry at most the recording budget; when the append
// takes longer, the reply goes first, the sender's next message can reach
// another replica, and that replica can store its entry before the late
// one. Such a late entry was stored at least a budget after its ts, and
// every message sent after its reply has a ts at least a budget later than
// its own. So an entry stored half a budget or more after its ts moves back
// before the entries stored ahead of it whose ts is half a budget or more
// later than its own. An entry that was sent before it was either stored
// ahead of it with a ts not that much later, or is late itself and moves
// back in turn; entries of concurrent senders may go either way. The half
// budget is the clock skew tolerated between replicas and the server.
// Entries stored on time keep their stream order among themselves
// whatever their ts (a clock set back reorders none of them).
func InSendOrder(entries []StoredEntry, budget time.Duration) []StoredEntry {
	slack := max(budget.Milliseconds()/2, 1)
	for i := 1; i < len(entries); i++ {
		e := entries[i]
		if e.Corrupt || e.Stored == 0 || e.Stored-e.TS < slack {
			continue
		}
		j := i
		for j > 0 && !entries[j-1].Corrupt && entries[j-1].TS-e.TS >= slack {
			entries[j] = entries[j-1]
			j--
		}
		entries[j] = e
	}
	return entries
}
