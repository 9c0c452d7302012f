package when

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of spec 9.
const (
	MaxMessageRunes = 2000
	DefaultMinEvery = time.Minute
	horizonYears    = 5
	// MinDelay is the shortest delay a reminder may be set for.
	MinDelay = time.Second
)

// Failure is a validation error of a tool or command: a result code of
// spec 3.3 (err.<code> in the catalogue), the parameter at fault, and the
// catalogue arguments.
type Failure struct {
	Code  string
	Field string
	Args  map[string]string
}

// Error makes a *Failure usable as an error value inside the package.
func (f *Failure) Error() string { return "schenotify: " + f.Code }

func fail(code, field string, args map[string]string) *Failure {
	return &Failure{Code: code, Field: field, Args: args}
}

// TooLong is the too_long failure of a time parameter longer than
// MaxExprRunes code points, or nil. It names the field and the cap only:
// an over-long value is never echoed.
func TooLong(field, value string) *Failure {
	if utf8.RuneCountInString(value) <= MaxExprRunes {
		return nil
	}
	return fail("too_long", field, map[string]string{"field": field, "max": strconv.Itoa(MaxExprRunes)})
}

// Adjusted reports a DST adjustment of the requested wall time.
type Adjusted struct {
	Reason    string `json:"reason"`
	Requested string `json:"requested"`
}

// Plan is a validated reminder before it is stored.
type Plan struct {
	Message        string
	OriginalLength int
	Truncated      bool
	Rule           *Rule
	First          time.Time // next_due
	Until          time.Time // zero when none
	Next           []time.Time
	Adjusted       *Adjusted
	// Understood is the natural expression the time was read from ("" for
	// the fixed forms); replies say what it was read as.
	Understood string
}

// Start is the start of a reminder as given: at most one of Time and Delay.
type Start struct {
	Time     *TimeSpec
	TimeRaw  string
	Delay    time.Duration
	DelayRaw string
	Rule     *Rule
	Until    *TimeSpec
}

// ScheduleInput holds what PlanTool needs besides the parameters.
type ScheduleInput struct {
	Now      time.Time
	Zone     *time.Location
	MinEvery time.Duration // 0 means DefaultMinEvery
}

// PlanTool validates schedule_notify parameters with checks 1-8 of spec
// 3.3 in order; checks 9 (session) and 10 (caps) belong to the caller.
// Parameters given as null or "" count as absent, except message.
func PlanTool(params map[string]json.RawMessage, in ScheduleInput) (Plan, *Failure) {
	given := func(k string) bool {
		v, ok := params[k]
		v = bytes.TrimSpace(v)
		return ok && len(v) > 0 && !bytes.Equal(v, []byte("null")) && !bytes.Equal(v, []byte(`""`))
	}
	// 1. message and at least one of the time parameters.
	msgRaw, hasMsg := params["message"]
	msgRaw = bytes.TrimSpace(msgRaw)
	var msg string
	msgIsString := hasMsg && len(msgRaw) > 0 && msgRaw[0] == '"' && json.Unmarshal(msgRaw, &msg) == nil
	if !hasMsg || len(msgRaw) == 0 || bytes.Equal(msgRaw, []byte("null")) || (msgIsString && strings.TrimSpace(msg) == "") ||
		!(given("time_str") || given("delay") || given("recurrence")) {
		return Plan{}, fail("missing_params", "", nil)
	}
	// 2. every given parameter is a JSON string.
	str := map[string]string{}
	for _, k := range []string{"message", "time_str", "delay", "recurrence", "until"} {
		if k != "message" && !given(k) {
			continue
		}
		v := bytes.TrimSpace(params[k])
		var s string
		if v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return Plan{}, fail("invalid_param", k, map[string]string{"field": k})
		}
		if k != "message" {
			if f := TooLong(k, s); f != nil {
				return Plan{}, f
			}
		}
		str[k] = s
	}
	// 3. a time or a delay, not both.
	_, hasTime := str["time_str"]
	_, hasDelay := str["delay"]
	if hasTime && hasDelay {
		return Plan{}, fail("conflicting_params", "delay", nil)
	}
	var w Start
	// 4. the start.
	var understood string
	if hasTime {
		ts, err := ParseTime(str["time_str"], in.Zone)
		switch {
		case err == nil:
			w.Time, w.TimeRaw = &ts, str["time_str"]
		default:
			// Not form L or R: a natural expression ("明天下午3点",
			// "every weekday 9am"), read by the same rules as !sche add.
			n, f := readNaturalFailure(str["time_str"], in, true)
			if f != nil {
				// The reader's own hints (calendar_range: the calendar's
				// last year) reach the LLM; anything else is invalid_time.
				if !isHint(f.Code) {
					f.Code = "invalid_time"
				}
				f.Field = "time_str"
				return Plan{}, f
			}
			if n.Rule != nil && given("recurrence") {
				return Plan{}, fail("invalid_time", "time_str", map[string]string{"value": cutExpr(str["time_str"])})
			}
			w = n.start()
			understood = n.Expr
		}
	}
	if hasDelay {
		d, err := ParseDuration(str["delay"])
		if err != nil || d < MinDelay {
			return Plan{}, fail("invalid_delay", "delay", map[string]string{"value": str["delay"]})
		}
		w.Delay, w.DelayRaw = d, str["delay"]
	}
	// 5. recurrence and until.
	if rec, ok := str["recurrence"]; ok {
		rule, f := parseRule(rec, in.MinEvery, "recurrence")
		if f != nil && f.Code == "invalid_recurrence" {
			// A natural recurrence ("每周一三五 9:00", "every 2 hours").
			if n, nf := readNaturalFailure(rec, in, true); nf == nil && n.Rule != nil {
				rule, f, understood = *n.Rule, nil, n.Expr
			} else if nf != nil && (nf.Code == "interval_too_short" || isHint(nf.Code)) {
				nf.Field = "recurrence"
				f = nf
			}
		}
		if f != nil {
			return Plan{}, f
		}
		w.Rule = &rule
	}
	if u, ok := str["until"]; ok {
		ts, err := ParseTime(u, in.Zone)
		if w.Rule == nil || err != nil {
			return Plan{}, fail("invalid_until", "until", map[string]string{"value": u})
		}
		w.Until = &ts
	}
	p, f := finishPlan(msg, w, in)
	if f != nil {
		return Plan{}, f
	}
	p.Understood = understood
	return p, nil
}

// isHint reports the result codes of the reader's hints (hintError and
// calendar_range), which name what to write instead.
func isHint(code string) bool {
	switch code {
	case "interval_with_clock", "interval_ambiguous", "calendar_range", "lunar_needs_date", "advance_too_long":
		return true
	}
	return false
}

// parseRule maps recurrence errors to their result codes.
func parseRule(expr string, minEvery time.Duration, field string) (Rule, *Failure) {
	if minEvery <= 0 {
		minEvery = DefaultMinEvery
	}
	rule, err := ParseRecurrence(expr, minEvery)
	switch {
	case err == errIntervalShort:
		return Rule{}, fail("interval_too_short", field, map[string]string{"value": expr, "min": FormatDuration(minEvery)})
	case err != nil:
		return Rule{}, fail("invalid_recurrence", field, map[string]string{"value": expr})
	}
	return rule, nil
}

// finishPlan runs checks 5 (a cron rule that never occurs) to 8 of spec
// 3.3 on a parsed start and builds the plan.
func finishPlan(msg string, w Start, in ScheduleInput) (Plan, *Failure) {
	now := in.Now.Truncate(time.Second)
	zone := in.Zone
	var start time.Time
	var startField string
	switch {
	case w.Time != nil:
		start, startField = w.Time.At, "time_str"
	case w.Delay > 0:
		start, startField = now.Add(w.Delay), "delay"
		if start.Before(now) { // overflow
			return Plan{}, fail("invalid_delay", "delay", map[string]string{"value": w.DelayRaw})
		}
	}
	if w.Rule != nil && w.Rule.Kind != KindEvery && w.Rule.CronNext(now, zone).IsZero() {
		if w.Rule.beyondCalendar(now, zone) {
			return Plan{}, calendarRangeFailure("recurrence")
		}
		return Plan{}, fail("invalid_recurrence", "recurrence", map[string]string{"value": w.Rule.Expr})
	}
	// 6. the start is after the current second.
	if startField != "" && !start.After(now) {
		return Plan{}, fail("time_passed", startField, map[string]string{"time": Local(start, zone), "now": Local(now, zone)})
	}
	// The first occurrence.
	first := start
	if w.Rule != nil {
		switch {
		case w.Rule.Kind != KindEvery && startField != "":
			first = w.Rule.CronNext(start.Add(-time.Second), zone)
		case w.Rule.Kind != KindEvery:
			first = w.Rule.CronNext(now, zone)
		case startField == "":
			first = now.Add(w.Rule.every)
		}
	}
	// 7. within the horizon.
	horizon := now.AddDate(horizonYears, 0, 0)
	if first.IsZero() || first.After(horizon) || first.Before(now) {
		shown := first
		if first.IsZero() || first.Before(now) {
			shown = start
		}
		return Plan{}, fail("too_far", "", map[string]string{"time": Local(shown, zone), "max": Local(horizon, zone)})
	}
	// 8. until not before the first occurrence.
	var until time.Time
	if w.Until != nil {
		until = w.Until.At
		if until.Before(first) {
			return Plan{}, fail("until_before_start", "until", map[string]string{"until": Local(until, zone), "time": Local(first, zone)})
		}
	}
	p := Plan{First: first, Until: until, Rule: w.Rule}
	p.Message, p.OriginalLength, p.Truncated = cutMessage(msg)
	if w.Time != nil && w.Time.Adjust != AdjustNone {
		p.Adjusted = &Adjusted{Reason: w.Time.Adjust, Requested: w.Time.Requested.String()}
	}
	if w.Rule != nil {
		p.Next = w.Rule.Upcoming(first, until, zone, 3)
	}
	return p, nil
}

// cutMessage makes msg valid UTF-8 and cuts it to MaxMessageRunes code
// points.
func cutMessage(msg string) (stored string, length int, truncated bool) {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	length = utf8.RuneCountInString(msg)
	if length <= MaxMessageRunes {
		return msg, length, false
	}
	i := 0
	for k := 0; k < MaxMessageRunes; k++ {
		_, size := utf8.DecodeRuneInString(msg[i:])
		i += size
	}
	return msg[:i], length, true
}
