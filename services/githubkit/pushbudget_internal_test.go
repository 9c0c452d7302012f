package githubkit

import (
	"strconv"
	"testing"
	"time"
)

// TestPushBudgetBucketsAndBound: a chat's bucket refills with the clock,
// the webhook's is paid once per delivery, and at the bound of buckets a
// new chat is held (counted for its summary) rather than given memory.
func TestPushBudgetBucketsAndBound(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := newPushBudget(PushBudget{ChatBurst: 2, ChatEvery: 10 * time.Second, HookBurst: 3, HookEvery: time.Minute}, func() time.Time { return now })
	sc := testScope(t, "a")
	send := func(chat string) []hookSend {
		return []hookSend{{sub: &Subscriber{Identity: Identity{BotUUID: "b", TargetType: "group", TargetID: chat}}}}
	}
	for i, want := range []int{1, 1, 0} { // the chat's burst of 2
		if ok, _ := p.admit(sc, "h", "r", "o/r", "en_US", send("c1")); len(ok) != want {
			t.Fatalf("delivery %d: %d sent, want %d", i, len(ok), want)
		}
	}
	// the webhook's burst of 3 is spent (the third delivery paid for it)
	now = now.Add(10 * time.Second)
	if ok, _ := p.admit(sc, "h", "r", "o/r", "en_US", send("c2")); len(ok) != 0 {
		t.Fatal("a delivery past the webhook's burst was sent")
	}
	due := p.due(true)
	if len(due) != 2 {
		t.Fatalf("%d summaries, want one per held chat (2)", len(due))
	}
	for k, h := range due {
		if want := map[string]int{send("c1")[0].sub.SID(): 1, send("c2")[0].sub.SID(): 1}[k.chat]; h.n != want {
			t.Fatalf("chat %s: %d held, want %d", k.chat, h.n, want)
		}
	}
	// at the bound, a chat without a bucket is held
	now = now.Add(time.Hour)
	q := newPushBudget(PushBudget{ChatBurst: 2, HookBurst: 1 << 20}, func() time.Time { return now })
	for i := range maxPushKeys {
		q.admit(sc, "h", "r", "o/r", "en_US", send(strconv.Itoa(i)))
		q.admit(sc, "h", "r", "o/r", "en_US", send(strconv.Itoa(i))) // not full: not swept
	}
	if ok, n := q.admit(sc, "h", "r", "o/r", "en_US", send("new")); len(ok) != 0 || n != 1 {
		t.Fatalf("at the bound: %d sent, %d held; want 0, 1", len(ok), n)
	}
	if len(q.chats) > maxPushKeys {
		t.Fatalf("%d chat buckets, over the bound %d", len(q.chats), maxPushKeys)
	}
}
