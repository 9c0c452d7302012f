package when_test

import (
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// naturalRow is one expression of the natural tables. want is the local
// time understood ("2030-01-02 15:30:00" in the row's zone), "+<duration>"
// for elapsed time, "rule <expr>" for a recurrence, or "" when the
// expression must be refused. rest is what follows the expression.
type naturalRow struct {
	in     string
	want   string
	rest   string
	adjust string // DST policy outcome, when.AdjustGap / AdjustOverlap
	zone   string // "" for the table's zone
	now    string // "" for the table's now
	utc    string // the instant in UTC, checked when set (zone rows)
}

// The fixed clocks: Tuesday 2030-01-01 10:00:00 in the table's zone.
const naturalNow = "2030-01-01 10:00:00"

func TestNaturalChinese(t *testing.T) {
	runNatural(t, "Asia/Shanghai", []naturalRow{
		// relative: elapsed time
		{in: "10分钟后 喝水", want: "+10m", rest: " 喝水"},
		{in: "半小时后开会", want: "+30m", rest: "开会"},
		{in: "半个小时后", want: "+30m"},
		{in: "一个半小时后 出发", want: "+1h30m", rest: " 出发"},
		{in: "1小时30分钟后", want: "+1h30m"},
		{in: "过10分钟", want: "+10m"},
		{in: "两个小时后吃药", want: "+2h", rest: "吃药"},
		{in: "一刻钟后", want: "+15m"},
		{in: "30秒后", want: "+30s"},
		{in: "二十五分钟以后", want: "+25m"},
		{in: "３个钟头后", want: "+3h"},
		// day counts keep the wall clock
		{in: "3天后", want: "2030-01-04 10:00:00"},
		{in: "两周后 复查", want: "2030-01-15 10:00:00", rest: " 复查"},
		{in: "1个月后", want: "2030-02-01 10:00:00"},
		{in: "3天后下午3点", want: "2030-01-04 15:00:00"},
		// day words and parts of day
		{in: "今天下午3点半 开会", want: "2030-01-01 15:30:00", rest: " 开会"},
		{in: "明天下午3点半开会", want: "2030-01-02 15:30:00", rest: "开会"},
		{in: "后天上午10点", want: "2030-01-03 10:00:00"},
		{in: "大后天 晚上8点", want: "2030-01-04 20:00:00"},
		{in: "明天", want: "2030-01-02 09:00:00"},
		{in: "明早", want: "2030-01-02 08:00:00"},
		{in: "明天早上7点", want: "2030-01-02 07:00:00"},
		{in: "今晚", want: "2030-01-01 20:00:00"},
		{in: "今晚12点", want: "2030-01-02 00:00:00"},
		{in: "明天中午", want: "2030-01-02 12:00:00"},
		{in: "明天中午1点", want: "2030-01-02 13:00:00"},
		{in: "明天下午", want: "2030-01-02 15:00:00"},
		{in: "明天傍晚", want: "2030-01-02 18:00:00"},
		{in: "下午", want: "2030-01-01 15:00:00"},
		{in: "凌晨2点", want: "2030-01-02 02:00:00"},
		{in: "晚上1点", want: "2030-01-02 01:00:00"},
		{in: "今天早上8点", want: "2030-01-01 08:00:00"}, // passed: the plan answers time_passed
		// weekdays
		{in: "周五下午", want: "2030-01-04 15:00:00"},
		{in: "下周一9点", want: "2030-01-07 09:00:00"},
		{in: "这周五 14:00", want: "2030-01-04 14:00:00"},
		{in: "星期天早上9点", want: "2030-01-06 09:00:00"},
		{in: "礼拜三", want: "2030-01-02 09:00:00"},
		{in: "周二9点", want: "2030-01-08 09:00:00"}, // today's 9:00 has passed: next week's
		{in: "下下周三", want: "2030-01-16 09:00:00"},
		{in: "下个星期五晚上7点半", want: "2030-01-11 19:30:00"},
		// dates
		{in: "12月24日 20:00", want: "2030-12-24 20:00:00"},
		{in: "12月24号晚上8点", want: "2030-12-24 20:00:00"},
		{in: "2030年2月1日 9:00", want: "2030-02-01 09:00:00"},
		{in: "2031年1月1日", want: "2031-01-01 09:00:00"},
		{in: "1月1日", want: "2031-01-01 09:00:00", now: "2030-01-01 10:00:00"}, // today's 9:00 passed: next year
		{in: "5号下午3点", want: "2030-01-05 15:00:00"},
		{in: "1号", want: "2030-02-01 09:00:00"},
		{in: "十二月二十四日", want: "2030-12-24 09:00:00"},
		// clocks, Chinese numerals, full-width digits
		{in: "三点一刻", want: "2030-01-01 15:15:00"},
		{in: "九点三刻", want: "2030-01-01 21:45:00"},
		{in: "十点半 喝茶", want: "2030-01-01 10:30:00", rest: " 喝茶"},
		{in: "十二点", want: "2030-01-01 12:00:00"},
		{in: "3点", want: "2030-01-01 15:00:00"},
		{in: "下午3点", want: "2030-01-01 15:00:00"},
		{in: "下午15点", want: "2030-01-01 15:00:00"},
		{in: "晚上十一点四十五分", want: "2030-01-01 23:45:00"},
		{in: "下午3点05分", want: "2030-01-01 15:05:00"},
		{in: "10点零五分", want: "2030-01-01 10:05:00"},
		{in: "二十三点", want: "2030-01-01 23:00:00"},
		{in: "８点３０分", want: "2030-01-01 20:30:00"},
		{in: "明天８：３０", want: "2030-01-02 08:30:00"},
		{in: "明天两点", want: "2030-01-02 02:00:00"},
		{in: "明天下午两点，交报告", want: "2030-01-02 14:00:00", rest: "，交报告"},
		// recurrence
		{in: "每天8点 起床", want: "rule 0 8 * * *", rest: " 起床"},
		{in: "每周一三五 9:00", want: "rule 0 9 * * 1,3,5"},
		{in: "每月1号", want: "rule 0 9 1 * *"},
		{in: "每个月15号下午2点", want: "rule 0 14 15 * *"},
		// 工作日 follows China's working calendar, which does not reach
		// 2030: refused (calendar_range); TestCalendarTable reads them.
		{in: "工作日 9点", want: ""},
		{in: "每个工作日早上9点", want: ""},
		{in: "每周一到周五 18:00", want: "rule 0 18 * * 1-5"},
		{in: "每2小时", want: "rule @every 2h"},
		{in: "每隔30分钟", want: "rule @every 30m"},
		{in: "每小时 喝水", want: "rule @every 1h", rest: " 喝水"},
		{in: "每天晚上10点", want: "rule 0 22 * * *"},
		{in: "每年12月24日", want: "rule 0 9 24 12 *"},
		{in: "每周末 10点", want: "rule 0 10 * * 0,6"},
		{in: "每周六、日 8:30", want: "rule 30 8 * * 6,0"},
		// refused: never a guess
		{in: "明天25点 开会", want: ""},
		{in: "明天 3个苹果", want: ""},
		{in: "好的", want: ""},
		{in: "2月30日", want: ""},
		{in: "2030年2月29日", want: ""},
		{in: "每月32号", want: ""},
		{in: "每10秒", want: ""}, // under the one-minute minimum
		{in: "每天8点30秒", want: ""},
		{in: "", want: ""},
		// the zone setting: the same words, another zone
		{in: "明天下午3点", want: "2030-01-02 15:00:00", zone: "Asia/Shanghai", utc: "2030-01-02T07:00:00Z"},
		{in: "明天下午3点", want: "2030-01-02 15:00:00", zone: "Europe/Berlin", utc: "2030-01-02T14:00:00Z"},
		{in: "明天下午3点", want: "2030-01-02 15:00:00", zone: "UTC", utc: "2030-01-02T15:00:00Z"},
		// DST edges (America/New_York: 2030-03-10 02:00 -> 03:00, 2030-11-03 02:00 -> 01:00)
		{in: "明天凌晨2点半", want: "2030-03-10 03:30:00", adjust: when.AdjustGap, zone: "America/New_York", now: "2030-03-09 12:00:00", utc: "2030-03-10T07:30:00Z"},
		{in: "明天凌晨1点半", want: "2030-11-03 01:30:00", adjust: when.AdjustOverlap, zone: "America/New_York", now: "2030-11-02 12:00:00", utc: "2030-11-03T05:30:00Z"},
		{in: "2小时后", want: "+2h", zone: "America/New_York", now: "2030-03-10 01:30:00"},
		{in: "1天后", want: "2030-03-10 12:00:00", zone: "America/New_York", now: "2030-03-09 12:00:00", utc: "2030-03-10T16:00:00Z"},
	})
}

func TestNaturalEnglish(t *testing.T) {
	runNatural(t, "America/New_York", []naturalRow{
		// relative
		{in: "in 10 minutes stretch", want: "+10m", rest: " stretch"},
		{in: "in an hour", want: "+1h"},
		{in: "in half an hour", want: "+30m"},
		{in: "in 2 hours and 30 minutes", want: "+2h30m"},
		{in: "in an hour and a half", want: "+1h30m"},
		{in: "in 90m tea", want: "+1h30m", rest: " tea"},
		{in: "in a minute", want: "+1m"},
		{in: "in 45 secs", want: "+45s"},
		{in: "10 minutes later", want: "+10m"},
		{in: "2 hours from now", want: "+2h"},
		{in: "in three hours", want: "+3h"},
		{in: "IN 10 MINUTES", want: "+10m"},
		{in: "in 3 days", want: "2030-01-04 10:00:00"},
		{in: "in 2 weeks review", want: "2030-01-15 10:00:00", rest: " review"},
		{in: "in 1 month", want: "2030-02-01 10:00:00"},
		// day words and parts of day
		{in: "tomorrow 3pm call mom", want: "2030-01-02 15:00:00", rest: " call mom"},
		{in: "Tomorrow at 15:00", want: "2030-01-02 15:00:00"},
		{in: "tomorrow morning", want: "2030-01-02 09:00:00"},
		{in: "tomorrow evening", want: "2030-01-02 19:00:00"},
		{in: "tmr 8am", want: "2030-01-02 08:00:00"},
		{in: "tonight", want: "2030-01-01 20:00:00"},
		{in: "tonight at 9", want: "2030-01-01 21:00:00"},
		{in: "tonight at 11:30pm", want: "2030-01-01 23:30:00"},
		{in: "this afternoon", want: "2030-01-01 15:00:00"},
		{in: "today at noon", want: "2030-01-01 12:00:00"},
		{in: "at midnight", want: "2030-01-02 00:00:00"},
		{in: "the day after tomorrow 8am", want: "2030-01-03 08:00:00"},
		{in: "in the morning", want: "2030-01-02 09:00:00"},
		{in: "tomorrow at a cafe", want: "2030-01-02 09:00:00", rest: " at a cafe"},
		// clocks
		{in: "at 9 standup", want: "2030-01-01 21:00:00", rest: " standup"},
		{in: "9am", want: "2030-01-02 09:00:00"},
		{in: "3:30 p.m. dentist", want: "2030-01-01 15:30:00", rest: " dentist"},
		{in: "12am", want: "2030-01-02 00:00:00"},
		{in: "12pm lunch", want: "2030-01-01 12:00:00", rest: " lunch"},
		{in: "at 3 o'clock", want: "2030-01-01 15:00:00"},
		{in: "at three pm", want: "2030-01-01 15:00:00"},
		{in: "16:45", want: "2030-01-01 16:45:00"},
		{in: "tomorrow 7:15:30", want: "2030-01-02 07:15:30"},
		// weekdays
		{in: "next friday 9:00", want: "2030-01-11 09:00:00"},
		{in: "friday 5pm", want: "2030-01-04 17:00:00"},
		{in: "on monday", want: "2030-01-07 09:00:00"},
		{in: "this friday at 2pm", want: "2030-01-04 14:00:00"},
		{in: "next mon at 10am", want: "2030-01-07 10:00:00"},
		{in: "sunday morning", want: "2030-01-06 09:00:00"},
		{in: "tuesday 9am", want: "2030-01-08 09:00:00"}, // today's 9am has passed
		{in: "this coming thursday 6pm", want: "2030-01-03 18:00:00"},
		// dates
		{in: "12/24 8pm", want: "2030-12-24 20:00:00"},
		{in: "12/24/2031 8pm", want: "2031-12-24 20:00:00"},
		{in: "dec 24 8pm", want: "2030-12-24 20:00:00"},
		{in: "december 24th at 20:00", want: "2030-12-24 20:00:00"},
		{in: "24 dec 9am", want: "2030-12-24 09:00:00"},
		{in: "the 24th of december", want: "2030-12-24 09:00:00"},
		{in: "2030-12-24 20:00", want: "2030-12-24 20:00:00"},
		{in: "jan 1", want: "2031-01-01 09:00:00"},
		{in: "March 3, 2031 at 7pm", want: "2031-03-03 19:00:00"},
		// recurrence
		{in: "every day at 8", want: "rule 0 8 * * *"},
		{in: "every weekday 9am", want: "rule 0 9 * * 1-5"},
		{in: "weekdays at 9:30", want: "rule 30 9 * * 1-5"},
		{in: "every monday, wednesday and friday at 9am", want: "rule 0 9 * * 1,3,5"},
		{in: "every 2 hours", want: "rule @every 2h"},
		{in: "every 30 minutes", want: "rule @every 30m"},
		{in: "every hour", want: "rule @every 1h"},
		{in: "hourly", want: "rule @every 1h"},
		{in: "daily at 7am", want: "rule 0 7 * * *"},
		{in: "every month on the 1st", want: "rule 0 9 1 * *"},
		{in: "monthly on the 15th at 10am", want: "rule 0 10 15 * *"},
		{in: "every evening at 10", want: "rule 0 22 * * *"},
		{in: "every other day", want: "rule @every 2d"},
		{in: "every weekend at 10am", want: "rule 0 10 * * 0,6"},
		{in: "every tue and thu 6pm", want: "rule 0 18 * * 2,4"},
		{in: "every 3 days", want: "rule @every 3d"},
		{in: "every Sunday at noon", want: "rule 0 12 * * 0"},
		// refused
		{in: "tomorrow 25:00 meeting", want: ""},
		{in: "tomorrow 3 tickets", want: ""},
		{in: "soon x", want: ""},
		{in: "at a cafe", want: ""},
		{in: "13pm", want: ""},
		{in: "feb 30", want: ""},
		{in: "every 10 seconds", want: ""},
		{in: "every month", want: ""},
		{in: "in 10 parsecs", want: ""},
		{in: strings.Repeat("in 1 minute and ", 60) + "x", want: ""},
		// the zone setting
		{in: "tomorrow 3pm", want: "2030-01-02 15:00:00", zone: "America/New_York", utc: "2030-01-02T20:00:00Z"},
		{in: "tomorrow 3pm", want: "2030-01-02 15:00:00", zone: "Asia/Tokyo", utc: "2030-01-02T06:00:00Z"},
		{in: "tomorrow 3pm", want: "2030-01-02 15:00:00", zone: "Australia/Sydney", utc: "2030-01-02T04:00:00Z"},
		// DST edges
		{in: "tomorrow 2:30am", want: "2030-03-10 03:30:00", adjust: when.AdjustGap, now: "2030-03-09 12:00:00", utc: "2030-03-10T07:30:00Z"},
		{in: "tomorrow 1:30am", want: "2030-11-03 01:30:00", adjust: when.AdjustOverlap, now: "2030-11-02 12:00:00", utc: "2030-11-03T05:30:00Z"},
		{in: "in 2 hours", want: "+2h", now: "2030-11-03 00:30:00"},
		{in: "in 1 day", want: "2030-11-03 12:00:00", now: "2030-11-02 12:00:00", utc: "2030-11-03T17:00:00Z"},
		{in: "sunday 2:15am", want: "2030-03-10 03:15:00", adjust: when.AdjustGap, now: "2030-03-08 12:00:00"},
		{in: "tomorrow 2:30am", want: "2030-10-27 02:30:00", adjust: when.AdjustOverlap, zone: "Europe/Berlin", now: "2030-10-26 12:00:00", utc: "2030-10-27T00:30:00Z"},
	})
}

func runNatural(t *testing.T, zone string, rows []naturalRow) {
	t.Helper()
	if len(rows) < 60 {
		t.Fatalf("%d rows, the table needs at least 60", len(rows))
	}
	for _, tt := range rows {
		z, nowText := zone, naturalNow
		if tt.zone != "" {
			z = tt.zone
		}
		if tt.now != "" {
			nowText = tt.now
		}
		t.Run(z+"/"+tt.in, func(t *testing.T) {
			loc := mustZone(t, z)
			now, err := time.ParseInLocation(time.DateTime, nowText, loc)
			if err != nil {
				t.Fatal(err)
			}
			n, err := when.ReadNatural(tt.in, when.ScheduleInput{Now: now, Zone: loc})
			if tt.want == "" {
				if err == nil {
					t.Fatalf("ReadNatural(%q) = %s, want refused", tt.in, describe(n, loc))
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadNatural(%q): %v, want %s", tt.in, err, tt.want)
			}
			if got := describe(n, loc); got != tt.want {
				t.Errorf("ReadNatural(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if n.Rest != tt.rest {
				t.Errorf("rest %q, want %q", n.Rest, tt.rest)
			}
			if n.Expr+n.Rest != strings.TrimLeft(tt.in, " ") && strings.TrimRight(n.Expr, " ")+n.Rest != tt.in {
				t.Errorf("expr %q + rest %q do not give back %q", n.Expr, n.Rest, tt.in)
			}
			adj := ""
			if n.Time != nil {
				adj = n.Time.Adjust
			}
			if adj != tt.adjust {
				t.Errorf("adjust %q, want %q", adj, tt.adjust)
			}
			if tt.utc != "" && (n.Time == nil || n.Time.At.UTC().Format(time.RFC3339) != tt.utc) {
				t.Errorf("instant %s, want %s", describe(n, time.UTC), tt.utc)
			}
		})
	}
}

func describe(n when.Natural, loc *time.Location) string {
	switch {
	case n.Rule != nil && n.Time != nil:
		return "rule " + n.Rule.Display() + " from " + n.Time.At.In(loc).Format(time.DateTime)
	case n.Time != nil:
		return n.Time.At.In(loc).Format(time.DateTime)
	case n.Delay > 0:
		return "+" + when.FormatDuration(n.Delay)
	case n.Rule != nil:
		return "rule " + n.Rule.Display()
	}
	return "(nothing)"
}

// TestParseNaturalWhole: the tool's time_str must be an expression and
// nothing else.
func TestParseNaturalWhole(t *testing.T) {
	loc := mustZone(t, "Asia/Shanghai")
	now, _ := time.ParseInLocation(time.DateTime, naturalNow, loc)
	in := when.ScheduleInput{Now: now, Zone: loc}
	if _, err := when.ParseNatural("明天下午3点", in); err != nil {
		t.Fatal(err)
	}
	if _, err := when.ParseNatural("明天下午3点 开会", in); err == nil {
		t.Fatal("a message after the time_str expression was accepted")
	}
}
