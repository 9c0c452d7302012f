package schenotify_test

import (
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// dueAfterSetup runs a test's setup of reminders all due at one moment T
// on an environment of its own, T being room after the next whole second.
// A reminder set at or after its due time is refused (time_passed), so on a
// machine too slow to set them all before T, the round is dropped and run
// again on a fresh environment with twice the room; the dropped round's
// reminders are delivered to its own host, which nothing checks. What a
// test then asserts about delivery at T does not depend on how fast the
// adds were. setup reports false when an add was refused as past.
func dueAfterSetup(t *testing.T, room time.Duration, newEnv func() *env, setup func(e *env, T time.Time) bool) (*env, time.Time) {
	t.Helper()
	for range 6 {
		e := newEnv()
		T := nextSecond().Add(room)
		if setup(e, T) {
			return e, T
		}
		t.Logf("adds outlasted their due time %s: again with %v of room", T.Format(time.StampMilli), 2*room)
		room *= 2
	}
	t.Fatalf("could not set the reminders before their due time with %v of room", room)
	return nil, time.Time{}
}

// scheduleDue adds a reminder due at T and returns its id, or false when
// it was refused because T had already passed.
func (e *env) scheduleDue(t testing.TB, b binding.Binding, cfg string, s wire.Session, message string, T time.Time) (string, bool) {
	t.Helper()
	params := map[string]any{"message": message, "time_str": rfc(T)}
	r := e.tool(t, b, cfg, s, schenotify.ToolSchedule, params)
	if r["status"] == "ok" {
		return r["id"].(string), true
	}
	if r["code"] == "time_passed" && !time.Now().Before(T) {
		return "", false
	}
	t.Fatalf("schedule_notify %v: %v", params, r)
	return "", false
}
