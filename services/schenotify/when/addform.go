package when

import "time"

// When forms of !sche add (spec 4.2).
const (
	WhenIn    = "in"
	WhenCron  = "cron"
	WhenDate  = "date"
	WhenClock = "clock"
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
	default:
		return Plan{}, fail("invalid_time", "time_str", map[string]string{"value": spec.Raw})
	}
	return finishPlan(spec.Message, w, in)
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
