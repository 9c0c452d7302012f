package when

import "time"

// TimeSpec is a parsed time_str or until: the instant, and for form L the
// requested wall time and whether the DST policy changed it.
type TimeSpec struct {
	At        time.Time // UTC, to the second
	Adjust    string    // AdjustNone, AdjustGap or AdjustOverlap
	Requested Wall      // the wall time as written (form L only)
	Legacy    bool      // form L
}

// ParseTime parses form L (YYYY-MM-DD<ws>HH:MM:SS in loc, DST policy of
// spec 7.3) or form R (RFC 3339 with a mandatory offset, fractions
// truncated) as described in spec 3.3.
func ParseTime(s string, loc *time.Location) (TimeSpec, error) {
	if w, ok := parseLegacy(s, false); ok {
		at, adj := Resolve(w, loc)
		return TimeSpec{At: at, Adjust: adj, Requested: w, Legacy: true}, nil
	}
	if at, ok := parseRFC3339(s); ok {
		return TimeSpec{At: at}, nil
	}
	return TimeSpec{}, errTimeForm
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digits reads between lo and hi ASCII digits at s[i:].
func digits(s string, i, lo, hi int) (v, next int, ok bool) {
	j := i
	for j < len(s) && j-i < hi && isDigit(s[j]) {
		v = v*10 + int(s[j]-'0')
		j++
	}
	if j-i < lo || (j < len(s) && isDigit(s[j])) {
		return 0, i, false
	}
	return v, j, true
}

// parseLegacy parses YYYY-MM-DD<ws>HH:MM[:SS]; the seconds are optional
// only when optSec is set (the !sche add date form).
func parseLegacy(s string, optSec bool) (Wall, bool) {
	var w Wall
	var ok bool
	i := 0
	if w.Year, i, ok = digits(s, i, 4, 4); !ok || w.Year == 0 {
		return Wall{}, false
	}
	if i >= len(s) || s[i] != '-' {
		return Wall{}, false
	}
	if w.Month, i, ok = digits(s, i+1, 1, 2); !ok {
		return Wall{}, false
	}
	if i >= len(s) || s[i] != '-' {
		return Wall{}, false
	}
	if w.Day, i, ok = digits(s, i+1, 1, 2); !ok {
		return Wall{}, false
	}
	j := i
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j == i {
		return Wall{}, false
	}
	rest, ok := parseClock(s[j:], optSec)
	if !ok {
		return Wall{}, false
	}
	w.Hour, w.Minute, w.Second = rest.Hour, rest.Minute, rest.Second
	if !validWall(w) {
		return Wall{}, false
	}
	return w, true
}

// parseClock parses HH:MM[:SS] (1-2 digits each) and nothing else.
func parseClock(s string, optSec bool) (Wall, bool) {
	var w Wall
	var ok bool
	i := 0
	if w.Hour, i, ok = digits(s, i, 1, 2); !ok {
		return Wall{}, false
	}
	if i >= len(s) || s[i] != ':' {
		return Wall{}, false
	}
	if w.Minute, i, ok = digits(s, i+1, 1, 2); !ok {
		return Wall{}, false
	}
	switch {
	case i < len(s) && s[i] == ':':
		if w.Second, i, ok = digits(s, i+1, 1, 2); !ok {
			return Wall{}, false
		}
	case !optSec:
		return Wall{}, false
	}
	if i != len(s) || w.Hour > 23 || w.Minute > 59 || w.Second > 59 {
		return Wall{}, false
	}
	return w, true
}

func validWall(w Wall) bool {
	if w.Year < 1 || w.Year > 9999 || w.Month < 1 || w.Month > 12 || w.Day < 1 ||
		w.Hour > 23 || w.Minute > 59 || w.Second > 59 {
		return false
	}
	return w.Day <= daysIn(w.Year, w.Month)
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// parseRFC3339 parses YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM) strictly.
func parseRFC3339(s string) (time.Time, bool) {
	var w Wall
	var ok bool
	fixed := func(i, n int) (int, int, bool) { return digits(s, i, n, n) }
	i := 0
	if w.Year, i, ok = fixed(i, 4); !ok || i >= len(s) || s[i] != '-' {
		return time.Time{}, false
	}
	if w.Month, i, ok = fixed(i+1, 2); !ok || i >= len(s) || s[i] != '-' {
		return time.Time{}, false
	}
	if w.Day, i, ok = fixed(i+1, 2); !ok || i >= len(s) || (s[i] != 'T' && s[i] != 't') {
		return time.Time{}, false
	}
	if w.Hour, i, ok = fixed(i+1, 2); !ok || i >= len(s) || s[i] != ':' {
		return time.Time{}, false
	}
	if w.Minute, i, ok = fixed(i+1, 2); !ok || i >= len(s) || s[i] != ':' {
		return time.Time{}, false
	}
	if w.Second, i, ok = fixed(i+1, 2); !ok {
		return time.Time{}, false
	}
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == i+1 {
			return time.Time{}, false
		}
		i = j
	}
	if i >= len(s) {
		return time.Time{}, false
	}
	off := 0
	switch s[i] {
	case 'Z', 'z':
		i++
	case '+', '-':
		sign := 1
		if s[i] == '-' {
			sign = -1
		}
		var oh, om int
		if oh, i, ok = fixed(i+1, 2); !ok || i >= len(s) || s[i] != ':' {
			return time.Time{}, false
		}
		if om, i, ok = fixed(i+1, 2); !ok || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		off = sign * (oh*3600 + om*60)
	default:
		return time.Time{}, false
	}
	if i != len(s) || !validWall(w) {
		return time.Time{}, false
	}
	return w.naive().Add(-time.Duration(off) * time.Second), true
}
