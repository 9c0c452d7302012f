package when

import (
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// When forms of !sche add (spec 4.2).
const (
	WhenIn    = "in"
	WhenCron  = "cron"
	WhenDate  = "date"
	WhenClock = "clock"
	// WhenNatural is a natural expression at the start of Raw, read with
	// ReadNatural when the clock and zone are known; the message follows it.
	WhenNatural = "natural"
)

// AddSpec is the syntax of "!sche add <when> <message>".
type AddSpec struct {
	Form    string
	Raw     string        // the <when> value as typed (folded)
	Delay   time.Duration // WhenIn
	DelayOK bool
	Expr    string // WhenCron
	Wall    Wall   // WhenDate, WhenClock (date fields zero for a clock)
	WallOK  bool
	Message string
}

// ParseDateTime parses the date form's "YYYY-MM-DD HH:MM[:SS]" (seconds
// optional) as a wall time.
func ParseDateTime(s string) (Wall, bool) { return parseLegacy(s, true) }

// ParseClock parses the clock form's "HH:MM[:SS]" (seconds optional) as a
// wall time with zero date fields.
func ParseClock(s string) (Wall, bool) { return parseClock(s, true) }

// PlanAdd validates a parsed "!sche add" like the tool (spec 4.2): the
// same codes, with the when forms mapped to a start or a rule.
func PlanAdd(spec AddSpec, in ScheduleInput) (Plan, *Failure) {
	switch spec.Form {
	case WhenCron:
		if f := TooLong("recurrence", spec.Expr); f != nil {
			return Plan{}, f
		}
	case WhenIn:
		if f := TooLong("delay", spec.Raw); f != nil {
			return Plan{}, f
		}
	case WhenDate, WhenClock:
		if f := TooLong("time_str", spec.Raw); f != nil {
			return Plan{}, f
		}
	}
	var w Start
	switch spec.Form {
	case WhenIn:
		if !spec.DelayOK {
			return Plan{}, fail("invalid_delay", "delay", map[string]string{"value": spec.Raw})
		}
		w.Delay, w.DelayRaw = spec.Delay, spec.Raw
	case WhenCron:
		rule, f := parseRule(spec.Expr, in.MinEvery, "recurrence")
		if f != nil {
			return Plan{}, f
		}
		w.Rule = &rule
	case WhenDate:
		if !spec.WallOK {
			return Plan{}, fail("invalid_time", "time_str", map[string]string{"value": spec.Raw})
		}
		at, adj := Resolve(spec.Wall, in.Zone)
		w.Time, w.TimeRaw = &TimeSpec{At: at, Adjust: adj, Requested: spec.Wall, Legacy: true}, spec.Raw
	case WhenClock:
		if !spec.WallOK {
			return Plan{}, fail("invalid_time", "time_str", map[string]string{"value": spec.Raw})
		}
		ts := nextClock(spec.Wall, in.Now.Truncate(time.Second), in.Zone)
		w.Time, w.TimeRaw = &ts, spec.Raw
	case WhenNatural:
		n, msg, err := ReadReminder(spec.Raw, in)
		if err != nil {
			return Plan{}, failureOf(err, spec.Raw, in)
		}
		if msg == "" {
			return Plan{}, fail("no_message", "", map[string]string{"value": cutExpr(n.Expr)})
		}
		w = n.start()
		p, f := finishPlan(msg, w, in)
		if f != nil {
			return Plan{}, f
		}
		p.Understood = n.Expr
		return p, nil
	default:
		return Plan{}, fail("invalid_time", "time_str", map[string]string{"value": spec.Raw})
	}
	return finishPlan(spec.Message, w, in)
}

// readNaturalFailure reads a natural expression (the whole of s when
// whole) and maps what it cannot read to the result codes: an @every under
// the minimum is interval_too_short, anything else natural_unreadable,
// whose text gives examples.
func readNaturalFailure(s string, in ScheduleInput, whole bool) (Natural, *Failure) {
	read := ReadNatural
	if whole {
		read = ParseNatural
	}
	n, err := read(s, in)
	if err != nil {
		return Natural{}, failureOf(err, s, in)
	}
	return n, nil
}

// failureOf maps an error of the reader to its result code: a hint of its
// own, interval_too_short, or natural_unreadable, whose text gives
// examples.
func failureOf(err error, s string, in ScheduleInput) *Failure {
	var hint *hintError
	switch {
	case errors.Is(err, errCalendarRange):
		return calendarRangeFailure("time_str")
	case errors.As(err, &hint):
		return fail(hint.code, "time_str", map[string]string{"value": cutExpr(s)})
	case errors.Is(err, errIntervalShort):
		minEvery := in.MinEvery
		if minEvery <= 0 {
			minEvery = DefaultMinEvery
		}
		return fail("interval_too_short", "recurrence", map[string]string{"value": cutExpr(s), "min": FormatDuration(minEvery)})
	}
	return fail("natural_unreadable", "time_str", map[string]string{"value": cutExpr(s)})
}

// calendarRangeFailure refuses a working day past the holiday data.
func calendarRangeFailure(field string) *Failure {
	return fail("calendar_range", field, map[string]string{"year": strconv.Itoa(CalendarLastYear())})
}

// start is the schedule start of a natural reading.
func (n Natural) start() Start {
	var w Start
	switch {
	case n.Time != nil:
		w.Time, w.TimeRaw = n.Time, n.Expr
	case n.Delay > 0:
		w.Delay, w.DelayRaw = n.Delay, n.Expr
	}
	// A rule may come with its start ("every other day at 7am").
	w.Rule = n.Rule
	return w
}

// naturalMessage is the message after a natural expression: separators
// (spaces, one comma or colon) dropped, the rest kept as typed.
func naturalMessage(rest string) (string, bool) {
	msg := strings.TrimLeftFunc(rest, unicode.IsSpace)
	for _, sep := range []string{",", "，", ":", "：", "、", "-"} {
		if m, ok := strings.CutPrefix(msg, sep); ok {
			msg = strings.TrimLeftFunc(m, unicode.IsSpace)
			break
		}
	}
	if strings.TrimSpace(msg) == "" {
		return "", false
	}
	return msg, true
}

// cutExpr shortens an expression shown back in a reply.
func cutExpr(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= 60 {
		return s
	}
	return string([]rune(s)[:60]) + "…"
}

// nextClock is the next occurrence of a wall clock time in loc: today if
// strictly in the future, otherwise tomorrow (through the DST policy).
func nextClock(c Wall, now time.Time, loc *time.Location) TimeSpec {
	local := now.In(loc)
	for day := 0; day < 3; day++ {
		d := local.AddDate(0, 0, day)
		w := Wall{d.Year(), int(d.Month()), d.Day(), c.Hour, c.Minute, c.Second}
		at, adj := Resolve(w, loc)
		if at.After(now) {
			return TimeSpec{At: at, Adjust: adj, Requested: w, Legacy: true}
		}
	}
	return TimeSpec{At: now} // unreachable: tomorrow is always later
}
