package model_test

import (
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

func TestTakeoverTiming(t *testing.T) {
	const min = 60_000
	var ts model.TakeoverState
	if ts.TakenOver(0) || ts.Remaining(0) != 0 {
		t.Fatal("zero state taken over")
	}
	if tr := ts.TakeOver(1000, 10*min, model.ViaTrigger, ""); tr != model.Started {
		t.Fatalf("start = %v", tr)
	}
	if !ts.TakenOver(1000) || ts.StartedAt != 1000 || ts.ExpiresAt != 1000+10*min || ts.Via != "trigger" {
		t.Fatalf("after start %+v", ts)
	}
	if ts.Remaining(1500) != 599 {
		t.Fatalf("remaining %d, want floor 599", ts.Remaining(1500))
	}
	// A console extension keeps started_at and sets the operator.
	if tr := ts.TakeOver(5000, 10*min, model.ViaConsole, "alice"); tr != model.Extended {
		t.Fatalf("extend = %v", tr)
	}
	if ts.StartedAt != 1000 || ts.LastHumanAt != 5000 || ts.ExpiresAt != 5000+10*min || ts.Operator != "alice" || ts.Via != "trigger" {
		t.Fatalf("after extend %+v", ts)
	}
	// A trigger extension leaves the operator.
	ts.TakeOver(6000, 10*min, model.ViaTrigger, "")
	if ts.Operator != "alice" || ts.ExpiresAt != 6000+10*min {
		t.Fatalf("trigger extension %+v", ts)
	}
	// The deadline itself counts as released.
	if ts.TakenOver(ts.ExpiresAt) || !ts.TakenOver(ts.ExpiresAt-1) {
		t.Fatal("deadline test wrong")
	}
	// Extend-only does nothing once lapsed; a start after a lapse is a new start.
	lapsed := ts
	if tr := lapsed.Extend(ts.ExpiresAt, min, "bob"); tr != model.Unchanged || lapsed != ts {
		t.Fatalf("extend after lapse = %v %+v", tr, lapsed)
	}
	if tr := lapsed.TakeOver(ts.ExpiresAt+1, min, model.ViaReply, "bob"); tr != model.Started || lapsed.StartedAt != ts.ExpiresAt+1 || lapsed.Via != "reply" {
		t.Fatalf("start after lapse = %v %+v", tr, lapsed)
	}
	// Manual release.
	rel := ts
	if tr := rel.Release(7000, "bob", model.ReasonManual); tr != model.Released || rel.Active || rel.ReleasedBy != "bob" || rel.ReleaseReason != "manual" || rel.ReleasedAt != 7000 {
		t.Fatalf("release = %v %+v", tr, rel)
	}
	if tr := rel.Release(8000, "bob", model.ReasonManual); tr != model.Unchanged || rel.ReleasedAt != 7000 {
		t.Fatal("second release not a no-op")
	}
	// A manual release after the deadline records the timeout.
	late := ts
	late.Release(ts.ExpiresAt+5000, "bob", model.ReasonManual)
	if late.ReleaseReason != "timeout" || late.ReleasedBy != "" || late.ReleasedAt != ts.ExpiresAt {
		t.Fatalf("late release %+v", late)
	}
}

func TestScheduleAtRoundsUp(t *testing.T) {
	for in, want := range map[int64]int64{1000: 1000, 1001: 2000, 1999: 2000, 0: 0} {
		if got := model.ScheduleAt(in); got != want {
			t.Errorf("ScheduleAt(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestOnFire(t *testing.T) {
	rec := func(active bool, exp int64) *model.Record {
		return &model.Record{Takeover: model.TakeoverState{Active: active, ExpiresAt: exp}}
	}
	tests := []struct {
		name  string
		r     *model.Record
		fired int64
		now   int64
		want  model.FireAction
	}{
		{"missing record", nil, 10, 20, model.FireAck},
		{"inactive", rec(false, 10), 10, 20, model.FireAck},
		{"clock behind", rec(true, 10_000), 10_000, 9_000, model.FireNakUntil},
		{"extended", rec(true, 20_000), 10_000, 10_500, model.FireRearm},
		{"due", rec(true, 10_000), 10_000, 10_000, model.FireRelease},
		{"due after extension passed too", rec(true, 20_000), 10_000, 25_000, model.FireRelease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := model.OnFire(tt.r, tt.fired, tt.now); got != tt.want {
				t.Errorf("OnFire = %v, want %v", got, tt.want)
			}
		})
	}
	if model.ResumeAction(rec(true, 5), 5) != model.FireRelease || model.ResumeAction(rec(true, 6), 5) != model.FireRearm || model.ResumeAction(rec(false, 6), 5) != model.FireAck {
		t.Fatal("resume actions")
	}
}
