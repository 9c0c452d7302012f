package when

import (
	"strings"
	"time"
)

// DefaultSnooze is how long "!sche snooze" without a time waits.
const DefaultSnooze = 10 * time.Minute

// PlanWhen validates a new time for an existing reminder (snooze, edit):
// expr is a duration ("15m"), a fixed form (L or R), or a natural
// expression, whole; an amount alone ("10分钟", "10 minutes") counts as
// that much later. A recurrence is accepted only when allowRule is set.
// message is the reminder's text, cut as for an add. The checks and codes
// are those of an add (time_passed, too_far, interval_too_short), and an
// unreadable expression is natural_unreadable.
func PlanWhen(expr, message string, allowRule bool, in ScheduleInput) (Plan, *Failure) {
	e := strings.TrimSpace(expr)
	if f := TooLong("time_str", e); f != nil {
		return Plan{}, f
	}
	var w Start
	understood := ""
	switch {
	case e == "":
		w.Delay, w.DelayRaw = DefaultSnooze, FormatDuration(DefaultSnooze)
	default:
		if d, err := ParseDuration(e); err == nil {
			if d < MinDelay {
				return Plan{}, fail("invalid_delay", "delay", map[string]string{"value": cutExpr(e)})
			}
			w.Delay, w.DelayRaw = d, e
			break
		}
		if ts, err := ParseTime(e, in.Zone); err == nil {
			w.Time, w.TimeRaw = &ts, e
			break
		}
		n, f := readNaturalFailure(e, in, true)
		if f != nil && f.Code == "natural_unreadable" {
			// An amount alone: "10分钟", "10 minutes".
			for _, alt := range []string{e + "后", "in " + e} {
				if m, g := readNaturalFailure(alt, in, true); g == nil && m.Delay > 0 {
					n, f = m, nil
					n.Expr = e
					break
				}
			}
		}
		if f != nil {
			return Plan{}, f
		}
		if n.Rule != nil && !allowRule {
			return Plan{}, fail("natural_unreadable", "time_str", map[string]string{"value": cutExpr(e)})
		}
		w, understood = n.start(), n.Expr
	}
	p, f := finishPlan(message, w, in)
	if f != nil {
		return Plan{}, f
	}
	p.Understood = understood
	return p, nil
}

// CutMessage makes a new reminder text valid UTF-8 and cuts it to
// MaxMessageRunes code points, as an add does.
func CutMessage(msg string) (stored string, length int, truncated bool) { return cutMessage(msg) }
