package model_test

import (
	"slices"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

func TestEscalationSettings(t *testing.T) {
	s, problems := model.ParseSettings([]byte(`{}`), 0)
	if s.EscalateAfter != 0 || s.OperatorIdle != 0 || s.QueueNotice || s.WorkingHours != "" || s.Timezone != "UTC" ||
		!slices.Equal(s.CancelWords, []string{"取消人工", "cancel human"}) || len(problems) != 0 {
		t.Fatalf("defaults: %+v %v", s.Escalation, problems)
	}
	s, problems = model.ParseSettings([]byte(`{"escalate_after":5,"operator_idle_return":"90000","working_hours":"9-18","timezone":"Mars/Olympus",
		"cancel_words":"stop","escalate_fallback_chats":["b:group:1","junk"]}`), 0)
	if s.EscalateAfter != model.MinTakeoverTimeout || s.OperatorIdle != model.MaxEscalateSeconds || s.WorkingHours != "" ||
		s.Timezone != "UTC" || !slices.Equal(s.CancelWords, []string{"stop"}) || len(s.FallbackChats) != 1 {
		t.Fatalf("clamped and fallen back: %+v", s.Escalation)
	}
	for _, f := range []string{"working_hours", "timezone", "escalate_fallback_chats"} {
		if !slices.Contains(problems, f) {
			t.Errorf("problems %v lack %s", problems, f)
		}
	}
}

func TestWorkingHours(t *testing.T) {
	at := func(hhmm string) int64 {
		loc, _ := time.LoadLocation("Asia/Shanghai")
		d, _ := time.ParseInLocation("2006-01-02 15:04", "2026-12-06 "+hhmm, loc)
		return d.UnixMilli()
	}
	day := model.Escalation{WorkingHours: "09:00-18:00", Timezone: "Asia/Shanghai"}
	night := model.Escalation{WorkingHours: "22:00-06:00", Timezone: "Asia/Shanghai"}
	for _, c := range []struct {
		e    model.Escalation
		at   string
		want bool
	}{
		{day, "08:59", false}, {day, "09:00", true}, {day, "17:59", true}, {day, "18:00", false},
		{night, "23:00", true}, {night, "05:59", true}, {night, "06:00", false}, {night, "12:00", false},
		{model.Escalation{}, "03:00", true},
	} {
		if got := c.e.InWorkingHours(at(c.at)); got != c.want {
			t.Errorf("%q at %s: %v, want %v", c.e.WorkingHours, c.at, got, c.want)
		}
	}
	e := model.Escalation{CancelWords: []string{"取消人工", "Cancel Human"}}
	if !e.IsCancel("  cancel human ") || !e.IsCancel("取消人工") || e.IsCancel("please cancel human") || e.IsCancel("") {
		t.Error("IsCancel")
	}
}
