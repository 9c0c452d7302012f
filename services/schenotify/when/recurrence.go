package when

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
)

// Recurrence kinds as stored in records and results.
const (
	KindCron  = "cron"
	KindEvery = "every"
)

// Recurrence is the stored form of a rule: {"kind":"cron","expr":"30 2 * * *"}
// or {"kind":"every","expr":"2h"}.
type Recurrence struct {
	Kind string `json:"kind"`
	Expr string `json:"expr"`
}

// Rule is a parsed recurrence.
type Rule struct {
	Recurrence
	every time.Duration
	sched cron.Schedule
	cal   *calRule // KindCalendar
}

// maxCronSteps bounds the matches a policy occurrence search may drop
// (overlap hours drop at most one hour of matches).
const maxCronSteps = 4096

// ParseRecurrence parses a recurrence of spec 3.3: a 5-field cron
// expression or descriptor in robfig's ParseStandard syntax, or
// "@every <duration>" in the service's own duration grammar, which must be
// at least minEvery. TZ= and CRON_TZ= prefixes are refused.
func ParseRecurrence(expr string, minEvery time.Duration) (Rule, error) {
	s := strings.TrimSpace(expr)
	if s == "" || utf8.RuneCountInString(s) > MaxExprRunes || strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return Rule{}, errRecurrence
	}
	if rest, ok := strings.CutPrefix(s, "@every"); ok {
		if rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			return Rule{}, errRecurrence
		}
		d, err := ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return Rule{}, errRecurrence
		}
		if d < minEvery || d <= 0 {
			return Rule{}, errIntervalShort
		}
		return Rule{Recurrence: Recurrence{Kind: KindEvery, Expr: strings.TrimSpace(rest)}, every: d}, nil
	}
	sched, err := parseCron(s)
	if err != nil {
		// Not cron: a calendar spec ("monthly last-day 09:00"). Every
		// expression cron accepts was tried first, so stored cron rules
		// read exactly as before.
		c, cerr := parseCalendar(s)
		if cerr != nil {
			return Rule{}, errRecurrence
		}
		return calendarRule(c), nil
	}
	return Rule{Recurrence: Recurrence{Kind: KindCron, Expr: s}, sched: sched}, nil
}

// parseCron wraps robfig's parser and turns a panic into an error.
func parseCron(s string) (sched cron.Schedule, err error) {
	defer func() {
		if recover() != nil {
			sched, err = nil, errRecurrence
		}
	}()
	return cron.ParseStandard(s)
}

// RuleOf parses a stored recurrence without the minimum-interval check.
func RuleOf(r Recurrence) (Rule, error) {
	if r.Kind == KindEvery {
		return ParseRecurrence("@every "+r.Expr, time.Second)
	}
	if r.Kind == KindCalendar {
		c, err := parseCalendar(r.Expr)
		if err != nil {
			return Rule{}, errRecurrence
		}
		return calendarRule(c), nil
	}
	if r.Kind != KindCron {
		return Rule{}, errRecurrence
	}
	return ParseRecurrence(r.Expr, 0)
}

// Every is the interval of an @every rule, zero for cron.
func (r Rule) Every() time.Duration { return r.every }

// Display is the expression shown to users: the cron text, the calendar
// spec, or "@every d".
func (r Recurrence) Display() string {
	if r.Kind == KindEvery {
		return "@every " + r.Expr
	}
	return r.Expr
}

// CronNext returns the first policy occurrence (spec 7.3 rule 2) strictly
// after the instant after, in loc: robfig evaluates the expression over
// naive wall time, each match is mapped through Resolve, and instants not
// after the previous one are dropped. It returns the zero time when robfig
// finds no match within its five-year window. A calendar rule gives its
// own next occurrence (zero past the working calendar's coverage).
func (r Rule) CronNext(after time.Time, loc *time.Location) time.Time {
	if r.cal != nil {
		return r.cal.next(after, loc)
	}
	after = after.Truncate(time.Second)
	w := wallOf(after.In(loc)).naive()
	for range maxCronSteps {
		w = r.sched.Next(w)
		if w.IsZero() {
			return time.Time{}
		}
		at, _ := Resolve(wallOf(w), loc)
		if at.After(after) {
			return at
		}
	}
	return time.Time{}
}

// Next returns the first occurrence strictly after both prev (an
// occurrence of the series) and now. An @every series is anchored at prev,
// so a late or retried delivery never shifts it.
func (r Rule) Next(prev, now time.Time, loc *time.Location) time.Time {
	if r.Kind == KindEvery {
		if prev.After(now) {
			return prev.Add(r.every)
		}
		k := now.Sub(prev)/r.every + 1
		return prev.Add(k * r.every)
	}
	if prev.After(now) {
		now = prev
	}
	return r.CronNext(now, loc)
}

// Skipped counts the occurrences strictly after occ and not after now:
// those merged into a late delivery of occ. It stops counting at limit.
func (r Rule) Skipped(occ, now time.Time, loc *time.Location, limit int) int {
	if !now.After(occ) {
		return 0
	}
	if r.Kind == KindEvery {
		n := int64(now.Sub(occ) / r.every)
		return int(min(n, int64(limit)))
	}
	n := 0
	for t := r.CronNext(occ, loc); n < limit && !t.IsZero() && !t.After(now); t = r.CronNext(t, loc) {
		n++
	}
	return n
}

// Upcoming lists up to n occurrences starting with first, stopping after
// until when it is non-zero.
func (r Rule) Upcoming(first, until time.Time, loc *time.Location, n int) []time.Time {
	var out []time.Time
	t := first
	for len(out) < n && !t.IsZero() && (until.IsZero() || !t.After(until)) {
		out = append(out, t)
		if r.Kind == KindEvery {
			t = t.Add(r.every)
		} else {
			t = r.CronNext(t, loc)
		}
	}
	return out
}
