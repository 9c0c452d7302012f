package when_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// phrase is one "!sche add" line of the phrase tables. An accepted line
// has want (the first due time, local in the table's zone), rule (the
// stored rule's Display, "" for a one-shot) and msg; utc, when set, is
// the same instant in UTC (for wall times a DST overlap makes ambiguous);
// next lists the first occurrences of a rule ("01-02 15:04"). A refused
// line has code (the result code) and arg ("key=value" of its arguments).
// cmdOnly marks an advance notice written after the message: the tool's
// time_str holds the time alone, so the tool check is skipped.
type phrase struct {
	in, want, rule, msg string
	utc                 string
	next                []string
	code, arg           string
	cmdOnly             bool
}

type phraseTable struct {
	zone, now string // now is local, "2006-01-02 15:04:05"
	rows      []phrase
}

// TestPhraseTable reads every line the way "!sche add" does (PlanAdd,
// ReadReminder) and checks the time it resolves to, its rule and its
// message, in several zones (Asia/Shanghai, America/New_York on both
// sides of its DST changes, UTC) and at several clocks, including China's
// National Day and Spring Festival holidays and the end of the working
// calendar. Each accepted line is then given to schedule_notify with the
// expression the command understood as time_str: the tool must resolve
// it to the same instant and rule (one reader).
func TestPhraseTable(t *testing.T) {
	tables := phraseTables()
	total, zones := 0, map[string]bool{}
	for _, tb := range tables {
		total += len(tb.rows)
		zones[tb.zone] = true
		loc := mustZone(t, tb.zone)
		now, err := time.ParseInLocation(time.DateTime, tb.now, loc)
		if err != nil {
			t.Fatal(err)
		}
		in := when.ScheduleInput{Now: now, Zone: loc}
		for _, r := range tb.rows {
			t.Run(tb.zone+"@"+tb.now+"/"+r.in, func(t *testing.T) {
				checkPhrase(t, r, in, loc)
			})
		}
	}
	if total < 150 || len(zones) < 3 {
		t.Fatalf("%d phrases in %d zones; the table needs at least 150 in 3", total, len(zones))
	}
}

func checkPhrase(t *testing.T, r phrase, in when.ScheduleInput, loc *time.Location) {
	t.Helper()
	p, f := when.PlanAdd(when.AddSpec{Form: when.WhenNatural, Raw: r.in}, in)
	if r.code != "" {
		if f == nil {
			t.Fatalf("%q = %s (rule %q, msg %q), want refused with %s", r.in, p.First.In(loc).Format(time.DateTime), display(p), p.Message, r.code)
		}
		if f.Code != r.code {
			t.Fatalf("%q refused with %s %v, want %s", r.in, f.Code, f.Args, r.code)
		}
		if k, v, ok := strings.Cut(r.arg, "="); ok && f.Args[k] != v {
			t.Fatalf("%q: argument %s = %q, want %q", r.in, k, f.Args[k], v)
		}
		return
	}
	if f != nil {
		t.Fatalf("%q refused with %s %v, want %s", r.in, f.Code, f.Args, r.want)
	}
	if got := p.First.In(loc).Format(time.DateTime); got != r.want {
		t.Errorf("%q due %s, want %s", r.in, got, r.want)
	}
	if r.utc != "" && p.First.UTC().Format(time.RFC3339) != r.utc {
		t.Errorf("%q due %s, want %s", r.in, p.First.UTC().Format(time.RFC3339), r.utc)
	}
	if got := display(p); got != r.rule {
		t.Errorf("%q rule %q, want %q", r.in, got, r.rule)
	}
	if p.Message != r.msg {
		t.Errorf("%q message %q, want %q", r.in, p.Message, r.msg)
	}
	if r.next != nil {
		var got []string
		for _, x := range p.Next {
			got = append(got, x.In(loc).Format("01-02 15:04"))
		}
		if strings.Join(got, ",") != strings.Join(r.next, ",") {
			t.Errorf("%q next %v, want %v", r.in, got, r.next)
		}
	}
	if p.Rule != nil {
		// The stored form parses back to the same rule (records keep working).
		back, err := when.RuleOf(p.Rule.Recurrence)
		if err != nil || back.Recurrence != p.Rule.Recurrence {
			t.Errorf("%q: stored rule %+v does not parse back: %v", r.in, p.Rule.Recurrence, err)
		}
	}
	if r.cmdOnly {
		return
	}
	params := map[string]json.RawMessage{"message": jsonString(r.msg), "time_str": jsonString(p.Understood)}
	tp, tf := when.PlanTool(params, in)
	if tf != nil {
		t.Fatalf("tool time_str %q refused with %s %v; the command read it", p.Understood, tf.Code, tf.Args)
	}
	if !tp.First.Equal(p.First) || display(tp) != display(p) {
		t.Errorf("tool time_str %q: %s %q; command: %s %q", p.Understood, tp.First.In(loc), display(tp), p.First.In(loc), display(p))
	}
}

func display(p when.Plan) string {
	if p.Rule == nil {
		return ""
	}
	return p.Rule.Display()
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func phraseTables() []phraseTable {
	return []phraseTable{
		{zone: "Asia/Shanghai", now: "2026-12-06 10:00:00", rows: []phrase{ // a Sunday
			// The phrases.
			{in: "每隔一天 早上7点 浇花", want: "2026-12-07 07:00:00", rule: "days 2 from 2026-12-07 07:00", msg: "浇花", next: []string{"12-07 07:00", "12-09 07:00", "12-11 07:00"}},
			{in: "隔天 早上7点 浇花", want: "2026-12-07 07:00:00", rule: "days 2 from 2026-12-07 07:00", msg: "浇花"},
			{in: "月底 交报告", want: "2026-12-31 09:00:00", msg: "交报告"},
			{in: "下个月1号 还信用卡", want: "2027-01-01 09:00:00", msg: "还信用卡"},
			{in: "明天下午 3 点 开会", want: "2026-12-07 15:00:00", msg: "开会"},
			{in: "2小时后提醒我开会", want: "2026-12-06 12:00:00", msg: "开会"},
			{in: "remind me to call mom in 2 hours", want: "2026-12-06 12:00:00", msg: "call mom"},
			{in: "on the 15th pay rent", want: "2026-12-15 09:00:00", msg: "pay rent"},
			{in: "this friday 5pm drinks", want: "2026-12-11 17:00:00", msg: "drinks"},
			{in: "every other day at 7am water plants", want: "2026-12-07 07:00:00", rule: "days 2 from 2026-12-07 07:00", msg: "water plants"},
			{in: "every 2 days at 9am pills", want: "2026-12-07 09:00:00", rule: "days 2 from 2026-12-07 09:00", msg: "pills"},
			{in: "每个工作日 9点 站会", want: "2026-12-07 09:00:00", rule: "workdays cn 09:00", msg: "站会"},
			{in: "下个工作日 交材料", want: "2026-12-07 09:00:00", msg: "交材料"},
			{in: "农历八月十五 赏月", want: "2027-09-15 09:00:00", msg: "赏月"},
			{in: "每年农历生日 吃面", code: "lunar_needs_date"},
			{in: "每月最后一天 交房租", want: "2026-12-31 09:00:00", rule: "monthly last-day 09:00", msg: "交房租", next: []string{"12-31 09:00", "01-31 09:00", "02-28 09:00"}},
			{in: "每月第三个周五 下午4点 分享会", want: "2026-12-18 16:00:00", rule: "monthly 3 fri 16:00", msg: "分享会", next: []string{"12-18 16:00", "01-15 16:00", "02-19 16:00"}},
			{in: "last friday of every month 5pm retro", want: "2026-12-25 17:00:00", rule: "monthly last fri 17:00", msg: "retro", next: []string{"12-25 17:00", "01-29 17:00", "02-26 17:00"}},
			{in: "明天下午3点 开会 提前10分钟提醒我", want: "2026-12-07 14:50:00", msg: "开会", cmdOnly: true},
			{in: "tomorrow 3pm meeting, remind me 10 minutes before", want: "2026-12-07 14:50:00", msg: "meeting", cmdOnly: true},
			{in: "every morning at 8, give me today's weather and a motivational line", want: "2026-12-07 08:00:00", rule: "0 8 * * *", msg: "give me today's weather and a motivational line"},
			{in: "每周五下午5点 总结本周群里讨论的问题", want: "2026-12-11 17:00:00", rule: "0 17 * * 5", msg: "总结本周群里讨论的问题"},
			// Intervals with a time of day.
			{in: "每隔1天 7:00 浇花", want: "2026-12-07 07:00:00", rule: "days 2 from 2026-12-07 07:00", msg: "浇花"},
			{in: "每隔一天 晚上8点 倒垃圾", want: "2026-12-06 20:00:00", rule: "days 2 from 2026-12-06 20:00", msg: "倒垃圾"},
			{in: "每2天 下午3点 吃药", want: "2026-12-06 15:00:00", rule: "days 2 from 2026-12-06 15:00", msg: "吃药"},
			{in: "每隔一天 浇花", want: "2026-12-08 10:00:00", rule: "@every 2d", msg: "浇花"},
			{in: "每隔30分钟 喝水", want: "2026-12-06 10:30:00", rule: "@every 30m", msg: "喝水"},
			{in: "every 3 days at 6pm stretch", want: "2026-12-06 18:00:00", rule: "days 3 from 2026-12-06 18:00", msg: "stretch"},
			{in: "every other day water plants", want: "2026-12-08 10:00:00", rule: "@every 2d", msg: "water plants"},
			{in: "every other week at 10am review", want: "2026-12-07 10:00:00", rule: "days 14 from 2026-12-07 10:00", msg: "review"},
			{in: "every other day at 10am check", want: "2026-12-07 10:00:00", rule: "days 2 from 2026-12-07 10:00", msg: "check"},
			{in: "every 2 days at 9pm journal", want: "2026-12-06 21:00:00", rule: "days 2 from 2026-12-06 21:00", msg: "journal"},
			{in: "每3天 早上9点 换水", want: "2026-12-07 09:00:00", rule: "days 3 from 2026-12-07 09:00", msg: "换水"},
			{in: "每隔两天 浇花", code: "interval_ambiguous"},
			{in: "每隔3天 早上7点 浇花", code: "interval_ambiguous"},
			{in: "每隔一周 周一 开会", code: "interval_with_clock"},
			{in: "每2小时 早上8点 喝水", code: "interval_with_clock"},
			{in: "every 2 hours at 9am drink", code: "interval_with_clock"},
			{in: "every 30 minutes tomorrow stretch", code: "interval_with_clock"},
			{in: "hourly at noon stretch", code: "interval_with_clock"},
			// Month ends and days of next month.
			{in: "本月底 交报告", want: "2026-12-31 09:00:00", msg: "交报告"},
			{in: "下个月底 交报告", want: "2027-01-31 09:00:00", msg: "交报告"},
			{in: "月底下午5点 交报告", want: "2026-12-31 17:00:00", msg: "交报告"},
			{in: "月末 晚上8点 对账", want: "2026-12-31 20:00:00", msg: "对账"},
			{in: "下个月15号 上午10点 体检", want: "2027-01-15 10:00:00", msg: "体检"},
			{in: "下月3号 交房租", want: "2027-01-03 09:00:00", msg: "交房租"},
			{in: "end of the month report", want: "2026-12-31 09:00:00", msg: "report"},
			{in: "end of next month report", want: "2027-01-31 09:00:00", msg: "report"},
			{in: "the 1st of next month rent", want: "2027-01-01 09:00:00", msg: "rent"},
			{in: "next month on the 15th rent", want: "2027-01-15 09:00:00", msg: "rent"},
			{in: "on the 20th at 6pm party", want: "2026-12-20 18:00:00", msg: "party"},
			{in: "the 3rd dentist", want: "2027-01-03 09:00:00", msg: "dentist"},
			// Spaces inside times.
			{in: "明天下午 3 点 30 分 开会", want: "2026-12-07 15:30:00", msg: "开会"},
			{in: "明天 下午 3 点半 开会", want: "2026-12-07 15:30:00", msg: "开会"},
			{in: "后天上午 9 点 体检", want: "2026-12-08 09:00:00", msg: "体检"},
			{in: "明天 9 点 一刻 站会", want: "2026-12-07 09:15:00", msg: "站会"},
			{in: "今天 晚上 8 点 倒垃圾", want: "2026-12-06 20:00:00", msg: "倒垃圾"},
			// Remind me.
			{in: "提醒我明天早上8点吃药", want: "2026-12-07 08:00:00", msg: "吃药"},
			{in: "请提醒我 明天下午3点 开会", want: "2026-12-07 15:00:00", msg: "开会"},
			{in: "明天下午3点提醒我去开会", want: "2026-12-07 15:00:00", msg: "去开会"},
			{in: "半小时后 提醒我 喝水", want: "2026-12-06 10:30:00", msg: "喝水"},
			{in: "remind me to pay rent on the 15th", want: "2026-12-15 09:00:00", msg: "pay rent"},
			{in: "remind me to submit the report tomorrow at 3pm", want: "2026-12-07 15:00:00", msg: "submit the report"},
			{in: "remind me tomorrow at 9 to call bob", want: "2026-12-07 09:00:00", msg: "call bob"},
			{in: "Remind me to stretch every 2 hours", want: "2026-12-06 12:00:00", rule: "@every 2h", msg: "stretch"},
			{in: "remind me to water plants every other day at 7am", want: "2026-12-07 07:00:00", rule: "days 2 from 2026-12-07 07:00", msg: "water plants"},
			{in: "call mom in 2 hours", want: "2026-12-06 12:00:00", msg: "call mom"},
			{in: "pay rent on the 15th", want: "2026-12-15 09:00:00", msg: "pay rent"},
			{in: "stand-up at 9:30", want: "2026-12-06 21:30:00", msg: "stand-up"},
			{in: "in 2 hours remind me to stretch", want: "2026-12-06 12:00:00", msg: "stretch"},
			{in: "tomorrow 8am remind me to take pills", want: "2026-12-07 08:00:00", msg: "take pills"},
			{in: "buy tickets for friday", code: "natural_unreadable"},
			{in: "remind me to buy tickets for friday", code: "natural_unreadable"},
			{in: "remind me to call mom", code: "natural_unreadable"},
			// Month rules.
			{in: "每个月最后一天 晚上8点 对账", want: "2026-12-31 20:00:00", rule: "monthly last-day 20:00", msg: "对账"},
			{in: "每月底 交房租", want: "2026-12-31 09:00:00", rule: "monthly last-day 09:00", msg: "交房租"},
			{in: "每月第一个周一 10点 例会", want: "2026-12-07 10:00:00", rule: "monthly 1 mon 10:00", msg: "例会"},
			{in: "每月最后一个周五 17点 复盘", want: "2026-12-25 17:00:00", rule: "monthly last fri 17:00", msg: "复盘"},
			{in: "每月第2个星期三 早上9点 读书会", want: "2026-12-09 09:00:00", rule: "monthly 2 wed 09:00", msg: "读书会"},
			{in: "每个月第四个周日 下午2点 家庭会", want: "2026-12-27 14:00:00", rule: "monthly 4 sun 14:00", msg: "家庭会"},
			{in: "last day of every month pay rent", want: "2026-12-31 09:00:00", rule: "monthly last-day 09:00", msg: "pay rent"},
			{in: "on the last day of every month at 6pm invoices", want: "2026-12-31 18:00:00", rule: "monthly last-day 18:00", msg: "invoices"},
			{in: "third friday of every month at 4pm review", want: "2026-12-18 16:00:00", rule: "monthly 3 fri 16:00", msg: "review"},
			{in: "the first monday of every month at 10am sync", want: "2026-12-07 10:00:00", rule: "monthly 1 mon 10:00", msg: "sync"},
			{in: "every month on the last friday at 5pm retro", want: "2026-12-25 17:00:00", rule: "monthly last fri 17:00", msg: "retro"},
			{in: "monthly on the 2nd tuesday at 9am board", want: "2026-12-08 09:00:00", rule: "monthly 2 tue 09:00", msg: "board"},
			{in: "every month on the last day payday", want: "2026-12-31 09:00:00", rule: "monthly last-day 09:00", msg: "payday"},
			{in: "the 5th saturday of each month at 10am hike", want: "2027-01-30 10:00:00", rule: "monthly 5 sat 10:00", msg: "hike", next: []string{"01-30 10:00", "05-29 10:00", "07-31 10:00"}},
			// Advance notice.
			{in: "明天下午3点 提前10分钟提醒我 开会", want: "2026-12-07 14:50:00", msg: "开会"},
			{in: "明天下午3点 提前半小时 开会", want: "2026-12-07 14:30:00", msg: "开会"},
			{in: "后天上午10点 体检，提前1天提醒我", want: "2026-12-07 10:00:00", msg: "体检", cmdOnly: true},
			{in: "每天早上8点 提前5分钟 吃药", want: "2026-12-07 07:55:00", rule: "cron 0 8 * * * early 5m", msg: "吃药"},
			{in: "每个工作日 9点 提前15分钟提醒我 站会", want: "2026-12-07 08:45:00", rule: "workdays cn 09:00 early 15m", msg: "站会"},
			{in: "每月最后一天 提前1天 交房租", want: "2026-12-30 09:00:00", rule: "monthly last-day 09:00 early 1d", msg: "交房租", next: []string{"12-30 09:00", "01-30 09:00", "02-27 09:00"}},
			{in: "tomorrow at 3pm remind me 15 minutes before standup", want: "2026-12-07 14:45:00", msg: "standup"},
			{in: "tomorrow 9am dentist 1 hour early", want: "2026-12-07 08:00:00", msg: "dentist", cmdOnly: true},
			{in: "every day at 9am standup remind me 5 minutes before", want: "2026-12-07 08:55:00", rule: "cron 0 9 * * * early 5m", msg: "standup", cmdOnly: true},
			{in: "in 2 hours call, 10 minutes early", want: "2026-12-06 11:50:00", msg: "call", cmdOnly: true},
			{in: "10分钟后 提前10分钟提醒我 喝水", code: "advance_too_long"},
			{in: "每2小时 提前10分钟 喝水", code: "advance_too_long"},
			{in: "明天下午3点 提前8天 开会", code: "advance_too_long"},
			// China's working calendar and lunar dates.
			{in: "工作日 早上9点半 打卡", want: "2026-12-07 09:30:00", rule: "workdays cn 09:30", msg: "打卡"},
			{in: "下个工作日下午2点 交材料", want: "2026-12-07 14:00:00", msg: "交材料"},
			{in: "农历正月初一 拜年", want: "2027-02-06 09:00:00", msg: "拜年"},
			{in: "农历五月初五 包粽子", want: "2027-06-09 09:00:00", msg: "包粽子"},
			{in: "阴历8月15日 赏月", want: "2027-09-15 09:00:00", msg: "赏月"},
			{in: "每年农历八月十五 打电话回家", want: "2027-09-15 09:00:00", rule: "lunar 8-15 09:00", msg: "打电话回家"},
			{in: "每年农历正月初一 早上8点 拜年", want: "2027-02-06 08:00:00", rule: "lunar 1-1 08:00", msg: "拜年"},
			{in: "每年农历五月初五 吃粽子", want: "2027-06-09 09:00:00", rule: "lunar 5-5 09:00", msg: "吃粽子"},
			{in: "每年农历生日五月初五 吃面", want: "2027-06-09 09:00:00", rule: "lunar 5-5 09:00", msg: "吃面"},
			{in: "每年农历生日", code: "lunar_needs_date"},
			// Weekdays (this friday on a Sunday is the coming one).
			{in: "this friday drinks", want: "2026-12-11 09:00:00", msg: "drinks"},
			{in: "next friday 5pm drinks", want: "2026-12-11 17:00:00", msg: "drinks"},
			{in: "friday 5pm drinks", want: "2026-12-11 17:00:00", msg: "drinks"},
			{in: "this sunday 8pm call", want: "2026-12-06 20:00:00", msg: "call"},
			{in: "下周五 下午5点 聚餐", want: "2026-12-11 17:00:00", msg: "聚餐"},
			{in: "周五 交周报", want: "2026-12-11 09:00:00", msg: "交周报"},
			{in: "这周五 下午5点 聚餐", code: "time_passed"},
			// Forms that read as before.
			{in: "12月24日 晚上8点 聚餐", want: "2026-12-24 20:00:00", msg: "聚餐"},
			{in: "明天 9:30 站会", want: "2026-12-07 09:30:00", msg: "站会"},
			{in: "3天后 复查", want: "2026-12-09 10:00:00", msg: "复查"},
			{in: "半小时后 喝水", want: "2026-12-06 10:30:00", msg: "喝水"},
			{in: "今晚 倒垃圾", want: "2026-12-06 20:00:00", msg: "倒垃圾"},
			{in: "每天晚上10点 睡觉", want: "2026-12-06 22:00:00", rule: "0 22 * * *", msg: "睡觉"},
			{in: "每周一三五 9:00 健身", want: "2026-12-07 09:00:00", rule: "0 9 * * 1,3,5", msg: "健身"},
			{in: "every weekday 9am standup", want: "2026-12-07 09:00:00", rule: "0 9 * * 1-5", msg: "standup"},
			{in: "dec 24 8pm dinner", want: "2026-12-24 20:00:00", msg: "dinner"},
			{in: "tomorrow 3pm call mom", want: "2026-12-07 15:00:00", msg: "call mom"},
			// Refused.
			{in: "明天25点 开会", code: "natural_unreadable"},
			{in: "提前10分钟提醒我", code: "natural_unreadable"},
			{in: "明天下午3点", code: "no_message"},
			{in: "明天下午3点 提前10分钟提醒我", code: "no_message"},
			{in: "tomorrow 3pm", code: "no_message"},
			{in: "someday call mom", code: "natural_unreadable"},
			{in: "in 2 hours at 3pm call", code: "natural_unreadable"},
			{in: "every 2 hours, at 9 stretch", code: "natural_unreadable"},
		}},
		{zone: "America/New_York", now: "2026-03-07 10:00:00", rows: []phrase{ // Saturday; clocks spring forward on Sunday 2026-03-08
			{in: "tomorrow 2:30am check", want: "2026-03-08 03:30:00", msg: "check"},
			{in: "every day at 2:30am backup", want: "2026-03-08 03:30:00", rule: "30 2 * * *", msg: "backup", next: []string{"03-08 03:30", "03-09 02:30", "03-10 02:30"}},
			{in: "every other day at 7am water plants", want: "2026-03-08 07:00:00", rule: "days 2 from 2026-03-08 07:00", msg: "water plants", next: []string{"03-08 07:00", "03-10 07:00", "03-12 07:00"}},
			{in: "every 2 days at 9am pills", want: "2026-03-08 09:00:00", rule: "days 2 from 2026-03-08 09:00", msg: "pills"},
			{in: "in 24 hours renew", want: "2026-03-08 11:00:00", msg: "renew"},
			{in: "in 1 day renew", want: "2026-03-08 10:00:00", msg: "renew"},
			{in: "tomorrow 9am walk", want: "2026-03-08 09:00:00", msg: "walk"},
			{in: "every other day water plants", want: "2026-03-09 11:00:00", rule: "@every 2d", msg: "water plants"},
			{in: "remind me to call mom in 2 hours", want: "2026-03-07 12:00:00", msg: "call mom"},
			{in: "this friday drinks", want: "2026-03-13 09:00:00", msg: "drinks"},
			{in: "on the 15th pay rent", want: "2026-03-15 09:00:00", msg: "pay rent"},
			{in: "last day of every month pay rent", want: "2026-03-31 09:00:00", rule: "monthly last-day 09:00", msg: "pay rent"},
			{in: "third friday of every month at 4pm review", want: "2026-03-20 16:00:00", rule: "monthly 3 fri 16:00", msg: "review"},
			{in: "last friday of every month 5pm retro", want: "2026-03-27 17:00:00", rule: "monthly last fri 17:00", msg: "retro"},
			{in: "end of the month report", want: "2026-03-31 09:00:00", msg: "report"},
			{in: "the 1st of next month rent", want: "2026-04-01 09:00:00", msg: "rent"},
			{in: "tomorrow 3pm meeting, remind me 10 minutes before", want: "2026-03-08 14:50:00", msg: "meeting", cmdOnly: true},
			{in: "every day at 9am standup remind me 5 minutes before", want: "2026-03-08 08:55:00", rule: "cron 0 9 * * * early 5m", msg: "standup", cmdOnly: true},
			{in: "tomorrow 2:30am dentist, remind me 30 minutes before", want: "2026-03-08 03:00:00", utc: "2026-03-08T07:00:00Z", msg: "dentist", cmdOnly: true},
			{in: "every sunday at 2:30am sync", want: "2026-03-08 03:30:00", rule: "30 2 * * 0", msg: "sync"},
			{in: "每个工作日 9点 站会", want: "2026-03-09 09:00:00", rule: "workdays cn 09:00", msg: "站会"},
			{in: "下个工作日 交材料", want: "2026-03-09 09:00:00", msg: "交材料"},
			{in: "明天下午 3 点 开会", want: "2026-03-08 15:00:00", msg: "开会"},
			{in: "月底 交报告", want: "2026-03-31 09:00:00", msg: "交报告"},
			{in: "下个月1号 还信用卡", want: "2026-04-01 09:00:00", msg: "还信用卡"},
			{in: "每隔一天 早上7点 浇花", want: "2026-03-08 07:00:00", rule: "days 2 from 2026-03-08 07:00", msg: "浇花"},
		}},
		{zone: "America/New_York", now: "2026-10-31 22:00:00", rows: []phrase{ // Saturday; clocks fall back on Sunday 2026-11-01
			{in: "tomorrow 1:30am check", want: "2026-11-01 01:30:00", utc: "2026-11-01T05:30:00Z", msg: "check"},
			{in: "in 3 hours check", want: "2026-11-01 01:00:00", utc: "2026-11-01T05:00:00Z", msg: "check"},
			{in: "in 1 day check", want: "2026-11-01 22:00:00", utc: "2026-11-02T03:00:00Z", msg: "check"},
			{in: "every day at 9am pills", want: "2026-11-01 09:00:00", rule: "0 9 * * *", msg: "pills", next: []string{"11-01 09:00", "11-02 09:00", "11-03 09:00"}},
			{in: "every other day at 11pm journal", want: "2026-10-31 23:00:00", rule: "days 2 from 2026-10-31 23:00", msg: "journal", next: []string{"10-31 23:00", "11-02 23:00", "11-04 23:00"}},
			{in: "every day at 1:30am backup", want: "2026-11-01 01:30:00", utc: "2026-11-01T05:30:00Z", rule: "30 1 * * *", msg: "backup"},
			{in: "this friday drinks", want: "2026-11-06 09:00:00", msg: "drinks"},
			{in: "on the 15th pay rent", want: "2026-11-15 09:00:00", msg: "pay rent"},
			{in: "end of the month report", want: "2026-11-30 09:00:00", msg: "report"},
			{in: "last day of every month pay rent", want: "2026-11-30 09:00:00", rule: "monthly last-day 09:00", msg: "pay rent"},
			{in: "last friday of every month 5pm retro", want: "2026-11-27 17:00:00", rule: "monthly last fri 17:00", msg: "retro"},
			{in: "月底 交报告", want: "2026-11-30 09:00:00", msg: "交报告"},
			{in: "tonight 11pm lock up", want: "2026-10-31 23:00:00", msg: "lock up"},
		}},
		{zone: "UTC", now: "2027-12-31 10:00:00", rows: []phrase{ // Friday, the last day the working calendar covers
			{in: "下个工作日 交材料", code: "calendar_range", arg: "year=2027"},
			{in: "每个工作日 9点 站会", code: "calendar_range", arg: "year=2027"},
			{in: "工作日 下午3点 站会", want: "2027-12-31 15:00:00", rule: "workdays cn 15:00", msg: "站会", next: []string{"12-31 15:00"}},
			{in: "in 2 hours stretch", want: "2027-12-31 12:00:00", msg: "stretch"},
			{in: "tomorrow 9am brunch", want: "2028-01-01 09:00:00", msg: "brunch"},
			{in: "every other day at 7am water plants", want: "2028-01-01 07:00:00", rule: "days 2 from 2028-01-01 07:00", msg: "water plants"},
			{in: "月底 交报告", want: "2028-01-31 09:00:00", msg: "交报告"},
			{in: "下个月1号 还信用卡", want: "2028-01-01 09:00:00", msg: "还信用卡"},
			{in: "每月最后一天 交房租", want: "2028-01-31 09:00:00", rule: "monthly last-day 09:00", msg: "交房租"},
			{in: "remind me to call mom in 2 hours", want: "2027-12-31 12:00:00", msg: "call mom"},
			{in: "this friday drinks", want: "2028-01-07 09:00:00", msg: "drinks"},
			{in: "on the 15th pay rent", want: "2028-01-15 09:00:00", msg: "pay rent"},
		}},
		{zone: "Asia/Shanghai", now: "2026-09-30 18:00:00", rows: []phrase{ // Wednesday before the National Day holiday
			{in: "每个工作日 9点 站会", want: "2026-10-08 09:00:00", rule: "workdays cn 09:00", msg: "站会", next: []string{"10-08 09:00", "10-09 09:00", "10-10 09:00"}},
			{in: "下个工作日 交材料", want: "2026-10-08 09:00:00", msg: "交材料"},
			{in: "工作日 早上8点半 打卡 提前10分钟提醒我", want: "2026-10-08 08:20:00", rule: "workdays cn 08:30 early 10m", msg: "打卡", cmdOnly: true},
			{in: "明天 交材料", want: "2026-10-01 09:00:00", msg: "交材料"},
			{in: "农历八月十五 赏月", want: "2027-09-15 09:00:00", msg: "赏月"},
			{in: "每年农历八月十五 晚上8点 赏月", want: "2027-09-15 20:00:00", rule: "lunar 8-15 20:00", msg: "赏月"},
			{in: "月底 交报告", want: "2026-10-31 09:00:00", msg: "交报告"},
			{in: "下个月1号 还信用卡", want: "2026-10-01 09:00:00", msg: "还信用卡"},
			{in: "每月第三个周五 下午4点 分享会", want: "2026-10-16 16:00:00", rule: "monthly 3 fri 16:00", msg: "分享会"},
		}},
		{zone: "Asia/Shanghai", now: "2026-02-13 12:00:00", rows: []phrase{ // Friday before the Spring Festival holiday
			{in: "每个工作日 9点 站会", want: "2026-02-14 09:00:00", rule: "workdays cn 09:00", msg: "站会", next: []string{"02-14 09:00", "02-24 09:00", "02-25 09:00"}},
			{in: "下个工作日 交材料", want: "2026-02-14 09:00:00", msg: "交材料"},
			{in: "农历正月初一 拜年", want: "2026-02-17 09:00:00", msg: "拜年"},
			{in: "每年农历正月初一 早上8点 拜年", want: "2026-02-17 08:00:00", rule: "lunar 1-1 08:00", msg: "拜年"},
		}},
	}
}

// TestToolHints: schedule_notify gives the reader's hints too, on the
// parameter at fault: the calendar's last year, an interval with a clock.
func TestToolHints(t *testing.T) {
	utc := mustZone(t, "UTC")
	in := when.ScheduleInput{Now: time.Date(2027, 12, 31, 10, 0, 0, 0, time.UTC), Zone: utc}
	for _, tt := range []struct{ param, value, code, field string }{
		{"time_str", "下个工作日", "calendar_range", "time_str"},
		{"recurrence", "每个工作日 9点", "calendar_range", "recurrence"},
		{"recurrence", "workdays cn 09:00", "calendar_range", "recurrence"},
		{"time_str", "every 2 hours at 9am", "interval_with_clock", "time_str"},
		{"recurrence", "每隔两天", "interval_ambiguous", "recurrence"},
		{"time_str", "明天25点", "invalid_time", "time_str"},
	} {
		params := map[string]json.RawMessage{"message": jsonString("x"), tt.param: jsonString(tt.value)}
		_, f := when.PlanTool(params, in)
		if f == nil || f.Code != tt.code || f.Field != tt.field {
			t.Errorf("%s %q: %+v, want %s on %s", tt.param, tt.value, f, tt.code, tt.field)
			continue
		}
		if tt.code == "calendar_range" && f.Args["year"] != "2027" {
			t.Errorf("%s %q: year %q", tt.param, tt.value, f.Args["year"])
		}
	}
}
