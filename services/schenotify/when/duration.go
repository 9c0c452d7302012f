package when

import (
	"math"
	"strconv"
	"strings"
	"time"
)

var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond,
	"us": time.Microsecond,
	"µs": time.Microsecond, // U+00B5
	"μs": time.Microsecond, // U+03BC
	"ms": time.Millisecond,
	"s":  time.Second,
	"m":  time.Minute,
	"h":  time.Hour,
	"d":  24 * time.Hour,
	"w":  7 * 24 * time.Hour,
}

// ParseDuration parses the duration grammar of spec 3.3 used by delay,
// "in <duration>" and "@every": Go duration syntax without sign or
// fractions plus d (24 h) and w (7 d), e.g. "2h15m" or "1d12h"; or ISO 8601
// P[nW][nD][T[nH][nM][nS]] with integers only, e.g. "PT30M". The value must
// be a whole number of seconds; it may be zero (callers check minimums).
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errDuration
	}
	var d time.Duration
	var err error
	if s[0] == 'P' {
		d, err = parseISODuration(s[1:])
	} else {
		d, err = parseGoDuration(s)
	}
	if err != nil {
		return 0, err
	}
	if d%time.Second != 0 {
		return 0, errDuration
	}
	return d, nil
}

// addScaled returns acc + n*unit, refusing overflow.
func addScaled(acc time.Duration, n uint64, unit time.Duration) (time.Duration, error) {
	if n > uint64(math.MaxInt64)/uint64(unit) {
		return 0, errDuration
	}
	v := time.Duration(n) * unit
	if acc > math.MaxInt64-v {
		return 0, errDuration
	}
	return acc + v, nil
}

// leadingInt consumes ASCII digits; ok is false when there are none or the
// value overflows.
func leadingInt(s string) (n uint64, rest string, ok bool) {
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if n > (math.MaxUint64-9)/10 {
			return 0, "", false
		}
		n = n*10 + uint64(s[i]-'0')
	}
	return n, s[i:], i > 0
}

func parseGoDuration(s string) (time.Duration, error) {
	var d time.Duration
	for s != "" {
		n, rest, ok := leadingInt(s)
		if !ok {
			return 0, errDuration
		}
		i := 0
		for i < len(rest) && !(rest[i] >= '0' && rest[i] <= '9') {
			i++
		}
		unit, ok := durationUnits[rest[:i]]
		if !ok {
			return 0, errDuration
		}
		var err error
		if d, err = addScaled(d, n, unit); err != nil {
			return 0, err
		}
		s = rest[i:]
	}
	return d, nil
}

func parseISODuration(s string) (time.Duration, error) {
	datePart, timePart, hasT := strings.Cut(s, "T")
	if datePart == "" && !hasT {
		return 0, errDuration
	}
	if hasT && timePart == "" {
		return 0, errDuration
	}
	var d time.Duration
	parse := func(part string, order string, units map[byte]time.Duration) error {
		pos := 0 // designators must appear in order, each at most once
		for part != "" {
			n, rest, ok := leadingInt(part)
			if !ok || rest == "" {
				return errDuration
			}
			idx := strings.IndexByte(order[pos:], rest[0])
			if idx < 0 {
				return errDuration
			}
			pos += idx + 1
			var err error
			if d, err = addScaled(d, n, units[rest[0]]); err != nil {
				return err
			}
			part = rest[1:]
		}
		return nil
	}
	if err := parse(datePart, "WD", map[byte]time.Duration{'W': 7 * 24 * time.Hour, 'D': 24 * time.Hour}); err != nil {
		return 0, err
	}
	if err := parse(timePart, "HMS", map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second}); err != nil {
		return 0, err
	}
	return d, nil
}

// FormatDuration writes d in the grammar of ParseDuration using w, d, h, m
// and s, largest first ("1d12h", "90s" -> "1m30s"); zero is "0s".
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		name string
		v    time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if n := d / u.v; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10))
			b.WriteString(u.name)
			d -= n * u.v
		}
	}
	return b.String()
}
