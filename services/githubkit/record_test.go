package githubkit_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

func TestCompareIDs(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"99", "100", -1}, {"100", "99", 1}, {"100", "100", 0}, {"0", "1", -1}, {"007", "7", 0},
		{"18446744073709551616", "18446744073709551615", 1}, {"x", "1", -1}, {"", "0", -1},
	}
	for _, tc := range tests {
		if got := githubkit.CompareIDs(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareIDs(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func eventsOf(t *testing.T, specs ...string) []ghclient.Event {
	t.Helper()
	var out []ghclient.Event
	for i, f := range specs {
		var e ghclient.Event
		if err := json.Unmarshal(fakegithub.Event(f, int64(101+i)), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestSelectFilterThenCap is AT-30 at the unit level: 12 new events, 2 of
// them releases, cap 5.
func TestSelectFilterThenCap(t *testing.T) {
	var specs []string
	for i := range 12 {
		switch i {
		case 1, 3:
			specs = append(specs, "release_full")
		default:
			specs = append(specs, "push_full")
		}
	}
	evs := eventsOf(t, specs...)
	rel := githubkit.Select(evs, "100", []string{"release"}, 5)
	if len(rel.Events) != 2 || rel.More != 0 || rel.Events[0].ID != "102" || rel.Events[1].ID != "104" {
		t.Fatalf("release subscriber got %+v", rel)
	}
	all := githubkit.Select(evs, "100", nil, 5)
	if len(all.Events) != 5 || all.More != 7 || all.Events[0].ID != "108" || all.Events[4].ID != "112" {
		t.Fatalf("all-events subscriber got %d events more=%d first=%s", len(all.Events), all.More, all.Events[0].ID)
	}
	// Cursor "99" against "100"-style ids compares numerically; events at or
	// before the cursor are dropped, unformatted types never count.
	mixed := eventsOf(t, "watch", "push_full", "watch")
	mixed[0].Type, mixed[2].Type = "SponsorshipEvent", "PullRequestReviewThreadEvent"
	sel := githubkit.Select(mixed, "99", nil, 5)
	if len(sel.Events) != 1 || sel.Events[0].ID != "102" {
		t.Fatalf("mixed: %+v", sel)
	}
	if s := githubkit.Select(mixed, "102", nil, 5); len(s.Events) != 0 {
		t.Fatalf("at cursor: %+v", s)
	}
}

func TestBackoff(t *testing.T) {
	iv := 120 * time.Second
	for k := 1; k <= 10; k++ {
		d := min(iv*time.Duration(1<<(k-1)), githubkit.BackoffCap)
		lo := githubkit.Backoff(iv, k, func() float64 { return 0 })
		hi := githubkit.Backoff(iv, k, func() float64 { return 0.999999 })
		if lo != d/2 {
			t.Errorf("k=%d low %v, want %v", k, lo, d/2)
		}
		if hi > d || hi < d*99/100 {
			t.Errorf("k=%d high %v, want just under %v", k, hi, d)
		}
	}
	if got := githubkit.Backoff(iv, 60, nil); got > githubkit.BackoffCap || got < githubkit.BackoffCap/2 {
		t.Errorf("large k: %v", got)
	}
	for range 100 {
		j := githubkit.RateJitter(nil)
		if j < time.Second || j > 5*time.Second {
			t.Fatalf("jitter %v", j)
		}
	}
}

func TestRecordSubscribers(t *testing.T) {
	r := &githubkit.RepoRecord{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"b", "a", "c"} {
		r.Subscribers = append(r.Subscribers, &githubkit.Subscriber{
			Identity: githubkit.Identity{BotUUID: id, TargetType: "group", TargetID: "1"},
			AddedAt:  t0.Add(time.Duration(i/2) * time.Minute),
		})
	}
	r.SortSubscribers()
	got := ""
	for _, s := range r.Subscribers {
		got += s.BotUUID
	}
	if got != "abc" {
		t.Fatalf("order %s", got)
	}
	id := githubkit.Identity{BotUUID: "a", TargetType: "group", TargetID: "1"}
	if r.Find(id) == nil || !r.Remove(id) || r.Find(id) != nil || r.Remove(id) {
		t.Fatal("find/remove")
	}
	if sid := id.SID(); len(sid) != 16 {
		t.Fatalf("sid %q", sid)
	}
	if _, err := strconv.ParseUint(id.SID(), 16, 64); err != nil {
		t.Fatal(err)
	}
}

func TestRepoKey(t *testing.T) {
	if a, b := githubkit.RepoKey("O/R"), githubkit.RepoKey("o/r"); a != b || a != "by9y" {
		t.Fatalf("keys %q %q, want both by9y", a, b)
	}
	if k := githubkit.RepoKey("octocat/Hello-World"); strings.ContainsAny(k, ".*> =+/") {
		t.Fatalf("key %q is not subject-safe", k)
	}
}
