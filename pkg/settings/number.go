package settings

import (
	"math"
	"strconv"
	"strings"
)

// number is a decimal value read from a JSON number or a decimal string:
// digits × 10^exp with the sign apart, digits without leading or trailing
// zeros ("" for zero). It is parsed by hand rather than by big.Rat or
// ParseFloat so that an exponent like 1e999999999 costs nothing and a
// large integer stays exact.
type number struct {
	neg    bool
	digits string
	exp    int
}

// maxExp bounds the exponent kept; beyond it a value is far outside any
// bound an int setting has.
const maxExp = 1 << 20

// parseNumber parses the JSON number grammar, with an optional leading
// "+" as a decimal string may have.
func parseNumber(s string) (number, bool) {
	var d number
	switch {
	case strings.HasPrefix(s, "-"):
		d.neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[:i]
	if intPart == "" {
		return d, false
	}
	s = s[i:]
	var frac string
	if strings.HasPrefix(s, ".") {
		s = s[1:]
		j := 0
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == 0 {
			return d, false
		}
		frac, s = s[:j], s[j:]
	}
	exp := 0
	if s != "" {
		if s[0] != 'e' && s[0] != 'E' {
			return d, false
		}
		s = s[1:]
		neg := false
		switch {
		case strings.HasPrefix(s, "-"):
			neg, s = true, s[1:]
		case strings.HasPrefix(s, "+"):
			s = s[1:]
		}
		if s == "" {
			return d, false
		}
		for k := 0; k < len(s); k++ {
			if !isDigit(s[k]) {
				return d, false
			}
			if exp < maxExp {
				exp = exp*10 + int(s[k]-'0')
			}
		}
		exp = min(exp, maxExp)
		if neg {
			exp = -exp
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	d.digits, d.exp = trimmed, exp
	if d.digits == "" {
		d.neg, d.exp = false, 0
	}
	return d, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// integral reports whether the value has no fraction.
func (d number) integral() bool { return d.exp >= 0 }

// truncated returns the value without its fraction, or huge when that does
// not fit an int64 (its sign is d.neg).
func (d number) truncated() (n int64, huge bool) {
	intDigits := len(d.digits) + d.exp
	if intDigits <= 0 {
		return 0, false
	}
	if intDigits > 19 {
		return 0, true
	}
	text := d.digits
	if d.exp >= 0 {
		text += strings.Repeat("0", d.exp)
	} else {
		text = text[:intDigits]
	}
	u, err := strconv.ParseUint(text, 10, 64)
	if err != nil || u > math.MaxInt64 {
		return 0, true
	}
	if d.neg {
		return -int64(u), false
	}
	return int64(u), false
}

// compare returns -1, 0 or 1 as the truncated value is below, at or above b.
func (d number) compare(b int) int {
	n, huge := d.truncated()
	switch {
	case huge && d.neg:
		return -1
	case huge:
		return 1
	case n < int64(b):
		return -1
	case n > int64(b):
		return 1
	}
	return 0
}

func (d number) less(b int) bool    { return d.compare(b) < 0 }
func (d number) greater(b int) bool { return d.compare(b) > 0 }

// int returns the truncated value; call it only within an int's bounds.
func (d number) int() int {
	n, _ := d.truncated()
	return int(n)
}
