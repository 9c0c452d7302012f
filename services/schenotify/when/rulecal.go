package when

import (
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// KindCalendar is a recurrence that cron cannot express, stored as a spec
// string of this package's own grammar (Recurrence.Expr), one of:
//
//	monthly last-day 09:00        the last day of every month
//	monthly 3 fri 09:00           the third Friday of every month (1-5)
//	monthly last fri 09:00        the last Friday of every month
//	workdays cn 09:00             China's working days (holidays skipped, 调休 included)
//	lunar 8-15 09:00              every year on lunar month 8, day 15
//	days 2 from 2030-01-02 07:00  every 2 days at 07:00 wall time, from that day
//	cron 0 9 * * 1-5              a 5-field cron expression (with early only)
//
// each optionally followed by "early <duration>": every occurrence comes
// that much before the rule's time (advance notice). The form written is
// the canonical one, so a stored spec parses back to itself.
const KindCalendar = "calendar"

// maxEarly caps an advance notice.
const maxEarly = 7 * 24 * time.Hour

// calRule is a parsed KindCalendar spec.
type calRule struct {
	base     string // "last-day", "nth", "workdays", "lunar", "days", "cron"
	every    int    // days: the interval in days
	anchor   date   // days: the first day
	nth      int    // 1-5, -1 for the last
	wd       time.Weekday
	lm, ld   int
	h, m     int
	cronExpr string
	sched    cron.Schedule
	early    time.Duration
	lastYear int // workdays: the last year the calendar covers
}

var weekdayAbbr = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// spec is the canonical spec string.
func (c *calRule) spec() string {
	clock := twoDigits(c.h) + ":" + twoDigits(c.m)
	var s string
	switch c.base {
	case "last-day":
		s = "monthly last-day " + clock
	case "nth":
		n := "last"
		if c.nth > 0 {
			n = strconv.Itoa(c.nth)
		}
		s = "monthly " + n + " " + weekdayAbbr[c.wd] + " " + clock
	case "workdays":
		s = "workdays cn " + clock
	case "lunar":
		s = "lunar " + lunarLabel(c.lm, c.ld) + " " + clock
	case "days":
		a := c.anchor
		s = "days " + strconv.Itoa(c.every) + " from " + strconv.Itoa(a.y) + "-" + twoDigits(a.m) + "-" + twoDigits(a.d) + " " + clock
	case "cron":
		s = "cron " + c.cronExpr
	}
	if c.early > 0 {
		s += " early " + FormatDuration(c.early)
	}
	return s
}

func twoDigits(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// parseCalendar parses a KindCalendar spec (fields separated by spaces).
func parseCalendar(s string) (*calRule, error) {
	f := strings.Fields(s)
	c := &calRule{}
	if n := len(f); n >= 3 && f[n-2] == "early" {
		d, err := ParseDuration(f[n-1])
		if err != nil || d <= 0 || d > maxEarly {
			return nil, errRecurrence
		}
		c.early, f = d, f[:n-2]
	}
	if len(f) < 2 {
		return nil, errRecurrence
	}
	clockAt := func(i int) bool {
		if len(f) != i+1 {
			return false
		}
		w, ok := parseClock(f[i], true)
		if !ok || w.Second != 0 {
			return false
		}
		c.h, c.m = w.Hour, w.Minute
		return true
	}
	switch f[0] {
	case "monthly":
		if f[1] == "last-day" {
			c.base = "last-day"
			if !clockAt(2) {
				return nil, errRecurrence
			}
			break
		}
		if len(f) < 4 {
			return nil, errRecurrence
		}
		c.base = "nth"
		if f[1] == "last" {
			c.nth = -1
		} else if n, err := strconv.Atoi(f[1]); err == nil && n >= 1 && n <= 5 && len(f[1]) == 1 {
			c.nth = n
		} else {
			return nil, errRecurrence
		}
		wd := -1
		for i, a := range weekdayAbbr {
			if f[2] == a {
				wd = i
			}
		}
		if wd < 0 || !clockAt(3) {
			return nil, errRecurrence
		}
		c.wd = time.Weekday(wd)
	case "workdays":
		if f[1] != "cn" || !clockAt(2) {
			return nil, errRecurrence
		}
		c.base, c.lastYear = "workdays", CalendarLastYear()
	case "lunar":
		md := strings.Split(f[1], "-")
		if len(md) != 2 || !clockAt(2) {
			return nil, errRecurrence
		}
		m, err1 := strconv.Atoi(md[0])
		d, err2 := strconv.Atoi(md[1])
		if err1 != nil || err2 != nil || m < 1 || m > 12 || d < 1 || d > 30 || strconv.Itoa(m) != md[0] || strconv.Itoa(d) != md[1] {
			return nil, errRecurrence
		}
		c.base, c.lm, c.ld = "lunar", m, d
	case "days":
		n, err := strconv.Atoi(f[1])
		if err != nil || strconv.Itoa(n) != f[1] || n < 1 || n > 3660 || len(f) != 5 || f[2] != "from" || !clockAt(4) {
			return nil, errRecurrence
		}
		w, ok := parseLegacy(f[3]+" 00:00:00", false)
		if !ok || f[3] != strconv.Itoa(w.Year)+"-"+twoDigits(w.Month)+"-"+twoDigits(w.Day) || w.Year < 1000 {
			return nil, errRecurrence
		}
		c.base, c.every, c.anchor = "days", n, date{w.Year, w.Month, w.Day}
	case "cron":
		expr := strings.Join(f[1:], " ")
		if strings.HasPrefix(expr, "@") || strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
			return nil, errRecurrence
		}
		sched, err := parseCron(expr)
		if err != nil {
			return nil, errRecurrence
		}
		c.base, c.cronExpr, c.sched = "cron", expr, sched
	default:
		return nil, errRecurrence
	}
	return c, nil
}

// nextDay is the first day on or after d that the rule falls on.
func (c *calRule) nextDay(d date) (date, bool) {
	switch c.base {
	case "last-day":
		return lastDayOf(d), true
	case "nth":
		for k := 0; k < 3; k++ {
			m := date{d.y, d.m, 1}.time().AddDate(0, k, 0)
			if x, ok := nthWeekday(m.Year(), int(m.Month()), c.nth, c.wd); ok && !x.before(d) {
				return x, true
			}
		}
		// A fifth weekday may skip months; search a year.
		for k := 3; k < 14; k++ {
			m := date{d.y, d.m, 1}.time().AddDate(0, k, 0)
			if x, ok := nthWeekday(m.Year(), int(m.Month()), c.nth, c.wd); ok {
				return x, true
			}
		}
		return date{}, false
	case "workdays":
		return nextCNWorkday(d, c.lastYear)
	case "lunar":
		return nextLunar(d, c.lm, c.ld)
	case "days":
		if d.before(c.anchor) {
			return c.anchor, true
		}
		k := int(d.time().Sub(c.anchor.time()) / (24 * time.Hour))
		return d.add((c.every - k%c.every) % c.every), true
	}
	return date{}, false
}

// next is the first occurrence strictly after the instant after: the
// rule's wall time on a matching day through Resolve, minus the advance.
func (c *calRule) next(after time.Time, loc *time.Location) time.Time {
	after = after.Truncate(time.Second)
	if c.base == "cron" {
		w := wallOf(after.Add(c.early).In(loc)).naive()
		for range maxCronSteps {
			w = c.sched.Next(w)
			if w.IsZero() {
				return time.Time{}
			}
			at, _ := Resolve(wallOf(w), loc)
			if at = at.Add(-c.early); at.After(after) {
				return at
			}
		}
		return time.Time{}
	}
	d := dateOf(after.Add(c.early).In(loc)).add(-1)
	for range 64 {
		x, ok := c.nextDay(d)
		if !ok {
			return time.Time{}
		}
		at, _ := Resolve(Wall{x.y, x.m, x.d, c.h, c.m, 0}, loc)
		if at = at.Add(-c.early); at.After(after) {
			return at
		}
		d = x.add(1)
	}
	return time.Time{}
}

// withEarly returns the calendar form of rule r with every occurrence d
// earlier; ok is false for an @every rule (whose start is shifted instead).
func withEarly(r Rule, d time.Duration) (Rule, bool) {
	var c calRule
	switch r.Kind {
	case KindCron:
		if strings.HasPrefix(r.Expr, "@") {
			return Rule{}, false
		}
		c = calRule{base: "cron", cronExpr: strings.Join(strings.Fields(r.Expr), " "), sched: r.sched}
	case KindCalendar:
		c = *r.cal
	default:
		return Rule{}, false
	}
	c.early += d
	if c.early > maxEarly {
		return Rule{}, false
	}
	return calendarRule(&c), true
}

// calendarRule wraps a parsed calendar spec as a Rule.
func calendarRule(c *calRule) Rule {
	return Rule{Recurrence: Recurrence{Kind: KindCalendar, Expr: c.spec()}, cal: c}
}

// beyondCalendar reports a working-day rule that has no occurrence after
// now because the holiday data ends (calendar_range, not invalid_recurrence).
func (r Rule) beyondCalendar(now time.Time, loc *time.Location) bool {
	return r.cal != nil && r.cal.base == "workdays" && r.CronNext(now, loc).IsZero()
}

// PastCalendar reports that r is a working-day rule with no occurrence
// after the instant after only because China's working calendar ends
// there: the series goes on once a newer calendar covers the next years
// (a reminder pauses rather than ends).
func (r Rule) PastCalendar(after time.Time, loc *time.Location) bool {
	return r.beyondCalendar(after, loc)
}

// CalendarEnd is the last year of the working calendar r follows, 0 for
// a rule that follows none.
func (r Rule) CalendarEnd() int {
	if r.cal == nil || r.cal.base != "workdays" {
		return 0
	}
	return r.cal.lastYear
}

// WithCalendarEnd returns r with its working calendar ending at year when
// that is before the library's coverage (tests of a coverage end run
// against it); year 0, a later year and rules without a working calendar
// leave r as it is. It only ever narrows the coverage, so no caller can
// make a reminder fall on a day the library does not cover.
func (r Rule) WithCalendarEnd(year int) Rule {
	if year <= 0 || r.cal == nil || r.cal.base != "workdays" || year >= r.cal.lastYear {
		return r
	}
	c := *r.cal
	c.lastYear = year
	r.cal = &c
	return r
}
