package when

import (
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxExprRunes caps a time expression: longer input is not read (natural
// expressions, recurrence rules), so nothing unbounded is parsed or stored.
// A time parameter longer than this (time_str, delay, recurrence, until of
// schedule_notify; the <when> of !sche add cron/in/date/clock; the new time
// of a snooze or edit) is refused with too_long, which names the field and
// the cap and echoes none of the value (TooLong).
const MaxExprRunes = 200

// errNatural: a natural expression the rules do not cover; the caller
// answers with examples, never with a guess.
var errNatural = errors.New("schenotify: unreadable time expression")

// Natural is a time expression in Chinese or English read by rule (no
// model): exactly one of Time (an instant), Delay (elapsed time from now)
// and Rule (a recurrence, first occurrence from the rule) is set.
type Natural struct {
	Expr  string        // the text read as the time, as typed
	Rest  string        // what follows it (the message of "!sche add")
	Time  *TimeSpec     // a wall time resolved in the zone (DST policy of Resolve)
	Delay time.Duration // "in 10 minutes", "半小时后": elapsed time
	Rule  *Rule         // "每天8点", "every weekday 9am": cron or @every
}

// ReadNatural reads a natural time expression from the start of text and
// returns it with the rest. The reading depends on now and the zone loc
// only through its arguments. What follows the expression must be
// separated from it (a space or punctuation, or any text after Chinese)
// and must not look like more time ("明天25点"), otherwise the expression
// is refused rather than cut short. minEvery is the shortest @every.
//
// Rules worth knowing (the reply shows the instant understood):
//   - an hour without am/pm or a part of day is read on the 24-hour clock,
//     except when no day is named: then the next of h and h+12 is taken;
//   - a weekday alone ("周五", "friday") is the next such day whose time is
//     still ahead; "下周五"/"next friday" is the Friday of next week
//     (weeks start on Monday); "这周五" is this week's, "this friday" the coming one;
//   - a date without a year is the next such date still ahead;
//   - days, weeks and months ("3天后", "in 2 weeks") keep the wall clock,
//     hours, minutes and seconds are elapsed time;
//   - a day with no time is 09:00; a part of day alone has a default hour
//     (早上 8, 上午/morning 9, 中午/noon 12, 下午/afternoon 15, 傍晚 18,
//     evening 19, 晚上/tonight/night 20, 凌晨 2, 半夜/midnight 0 the next day).
func ReadNatural(text string, in ScheduleInput) (Natural, error) {
	if utf8.RuneCountInString(text) > 4*MaxExprRunes {
		return Natural{}, errNatural
	}
	// Positions are runes; off maps them to byte offsets of text, so the
	// expression and the rest are the input's own bytes (even invalid UTF-8).
	var orig []rune
	var off []int
	for i, r := range text {
		orig, off = append(orig, r), append(off, i)
	}
	off = append(off, len(text))
	sc := &scanner{r: foldNatural(orig)}
	sc.space()
	start := sc.i
	rd, ok := sc.expr()
	if !ok || sc.i == start {
		return Natural{}, errNatural
	}
	end := sc.i
	// Trailing spaces belong to neither part.
	for end > start && unicode.IsSpace(orig[end-1]) {
		end--
	}
	if end-start > MaxExprRunes {
		return Natural{}, errNatural
	}
	if !separated(sc.r, end) {
		return Natural{}, errNatural
	}
	n, err := rd.resolve(in)
	if err != nil {
		return Natural{}, err
	}
	n.Expr = text[off[start]:off[end]]
	n.Rest = text[off[end]:]
	return n, nil
}

// ParseNatural reads s as a whole as a natural time expression (the tool's
// time_str and recurrence): nothing may follow it.
func ParseNatural(s string, in ScheduleInput) (Natural, error) {
	n, err := ReadNatural(s, in)
	if err != nil {
		return Natural{}, err
	}
	if strings.TrimSpace(n.Rest) != "" {
		return Natural{}, errNatural
	}
	return n, nil
}

// separated reports whether the text after the expression (from i) may be
// a message: nothing, a space or punctuation, or (after Chinese) anything
// that does not continue the time.
func separated(r []rune, i int) bool {
	if i >= len(r) {
		return true
	}
	j := i
	for j < len(r) && unicode.IsSpace(r[j]) {
		j++
	}
	if j < len(r) && (isASCIIDigit(r[j]) || timeish(r[j:]) || atClock(r[j:])) {
		return false
	}
	if k := j; k < len(r) && (r[k] == ',' || r[k] == '，') {
		for k++; k < len(r) && unicode.IsSpace(r[k]); k++ {
		}
		if atClock(r[k:]) {
			return false
		}
	}
	if j > i {
		return true
	}
	c, prev := r[i], r[i-1]
	switch {
	case unicode.IsPunct(c) || unicode.IsSymbol(c):
		return true
	case isHan(prev) || isHan(c):
		return true
	}
	return false
}

// atClock reports whether r starts with "at" and a digit ("in 2 hours at
// 3pm"): a clock time that would be left in the text.
func atClock(r []rune) bool {
	k := 2
	if len(r) < 3 || r[0] != 'a' || r[1] != 't' {
		return false
	}
	for k < len(r) && unicode.IsSpace(r[k]) {
		k++
	}
	return k > 2 && k < len(r) && isASCIIDigit(r[k])
}

// timeish reports whether r starts with a Chinese numeral that reads as a
// clock or a count ("十五点", "三天"): more time, not a message.
func timeish(r []rune) bool {
	k := 0
	for k < len(r) && k < 4 && strings.ContainsRune("零一二两三四五六七八九十半", r[k]) {
		k++
	}
	return k > 0 && k < len(r) && strings.ContainsRune("点點时時分秒天周月号號个", r[k])
}

func isHan(r rune) bool        { return unicode.Is(unicode.Han, r) }
func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }

// foldNatural maps full-width digits, letters and punctuation to ASCII and
// ASCII letters to lower case, rune for rune, so positions stay those of
// the input.
func foldNatural(in []rune) []rune {
	out := make([]rune, len(in))
	for i, r := range in {
		switch {
		case r >= '！' && r <= '～':
			r = r - '！' + '!'
		case r == '\u3000':
			r = ' '
		}
		if r >= 'A' && r <= 'Z' {
			r += 'a' - 'A'
		}
		out[i] = r
	}
	return out
}

// scanner walks the folded runes; every reader restores the position when
// it does not match.
type scanner struct {
	r []rune
	i int
}

func (s *scanner) space() {
	for s.i < len(s.r) && unicode.IsSpace(s.r[s.i]) {
		s.i++
	}
}

// lit consumes the first of words found at the position. Words made of
// ASCII letters must end at a word boundary.
func (s *scanner) lit(words ...string) (string, bool) {
	for _, w := range words {
		wr := []rune(w)
		if s.i+len(wr) > len(s.r) || string(s.r[s.i:s.i+len(wr)]) != w {
			continue
		}
		end := s.i + len(wr)
		last := wr[len(wr)-1]
		if isASCIILetter(last) && end < len(s.r) && isASCIILetter(s.r[end]) {
			continue
		}
		s.i = end
		return w, true
	}
	return "", false
}

// word consumes an English word after optional spaces.
func (s *scanner) word(words ...string) (string, bool) {
	at := s.i
	s.space()
	if w, ok := s.lit(words...); ok {
		return w, true
	}
	s.i = at
	return "", false
}

func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' }

// digits reads 1 to max ASCII digits.
func (s *scanner) digits(max int) (int, bool) {
	j, v := s.i, 0
	for j < len(s.r) && j-s.i < max && isASCIIDigit(s.r[j]) {
		v = v*10 + int(s.r[j]-'0')
		j++
	}
	if j == s.i || (j < len(s.r) && isASCIIDigit(s.r[j])) {
		return 0, false
	}
	s.i = j
	return v, true
}

var hanDigits = map[rune]int{'零': 0, '〇': 0, '一': 1, '二': 2, '两': 2, '兩': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}

// hanNumber reads a Chinese numeral from 0 to 99 (十, 十五, 二十, 二十三, 两).
func (s *scanner) hanNumber() (int, bool) {
	j := s.i
	val, cur, seen := 0, -1, false
	for j < len(s.r) {
		c := s.r[j]
		if d, ok := hanDigits[c]; ok {
			if cur >= 0 {
				break // two digits in a row: not a numeral we read
			}
			cur = d
			seen = true
			j++
			continue
		}
		if c == '十' || c == '拾' {
			if val > 0 {
				break
			}
			if cur < 0 {
				cur = 1
			}
			val, cur, seen = cur*10, -1, true
			j++
			continue
		}
		break
	}
	if !seen {
		return 0, false
	}
	if cur > 0 {
		val += cur
	}
	s.i = j
	return val, true
}

var englishNumbers = []struct {
	w string
	n int
}{
	{"twelve", 12}, {"eleven", 11}, {"ten", 10}, {"nine", 9}, {"eight", 8}, {"seven", 7}, {"six", 6},
	{"five", 5}, {"four", 4}, {"three", 3}, {"two", 2}, {"one", 1}, {"fifteen", 15}, {"twenty", 20},
	{"thirty", 30}, {"forty", 40}, {"fifty", 50},
}

// number reads ASCII digits, a Chinese numeral or an English number word
// (not "a"/"an": see amount).
func (s *scanner) number(maxDigits int) (int, bool) {
	if n, ok := s.digits(maxDigits); ok {
		return n, true
	}
	if n, ok := s.hanNumber(); ok {
		return n, true
	}
	for _, e := range englishNumbers {
		if _, ok := s.lit(e.w); ok {
			return e.n, true
		}
	}
	return 0, false
}

// amount is number plus "a"/"an" for one ("an hour", "a minute").
func (s *scanner) amount(maxDigits int) (int, bool) {
	if n, ok := s.number(maxDigits); ok {
		return n, true
	}
	if _, ok := s.lit("an", "a"); ok {
		return 1, true
	}
	return 0, false
}

// clock is a time of day as read: the hour as written and what qualifies it.
type clock struct {
	set        bool
	h, m, sec  int
	hasSeconds bool
}

// dayKind says how the day of a reading is given.
type dayKind int

const (
	dayNone     dayKind = iota
	dayOffset           // today + n days / months
	dayWeekday          // a weekday, with a week rule
	dayDate             // a month and day, with or without year
	dayMonthDay         // a day of the month (5号), months ahead when months > 0
	dayMonthEnd         // the last day of a month (月底), months ahead
	dayWorkday          // the next working day of China's calendar (下个工作日)
	dayLunar            // a lunar month and day (农历八月十五)
)

// week rules of a weekday.
const (
	weekComing    = iota // the next such day still ahead
	weekThis             // this week's (weeks start on Monday)
	weekNext             // next week's
	weekAfterNext        // the week after next
)

// recurrence kinds of a reading.
const (
	recNone = iota
	recDaily
	recWeekdays    // dows
	recMonthly     // mday
	recYearly      // month, mday
	recEvery       // every
	recMonthLast   // the last day of every month
	recNthWeekday  // nth (or last) weekday of every month
	recWorkdayCN   // China's working days
	recLunarYearly // a lunar month and day every year
)

// reading is what the scanner understood, before now and the zone apply.
type reading struct {
	delay time.Duration // elapsed relative time

	day          dayKind
	days, months int  // dayOffset
	count        bool // dayOffset from a count ("3天后"), not a day word
	weekday      time.Weekday
	week         int
	year         int // 0 when not given
	month, mday  int
	part         string // part of day, "" when none
	clk          clock

	rec   int
	dows  []int
	every time.Duration
	nth   int // recNthWeekday: 1-5, -1 for the last

	lm, ld  int           // dayLunar, recLunarYearly
	advance time.Duration // "提前10分钟", "10 minutes before"
	hint    error         // read, but refused with this hint
}

// expr reads one expression: a recurrence, a relative time or a day and
// time of day, and an advance notice after it ("提前10分钟提醒我",
// "remind me 10 minutes before").
func (s *scanner) expr() (reading, bool) {
	rd, ok := s.expr0()
	if ok {
		if d, ok := s.advance(); ok {
			rd.advance = d
		}
	}
	return rd, ok
}

// advance reads an advance notice: [,] 提前 <amount> [提醒我], or
// [,] [remind me] <amount> before|early|earlier|in advance|ahead.
func (s *scanner) advance() (time.Duration, bool) {
	at := s.i
	s.space()
	s.lit(",", "，")
	s.space()
	if _, ok := s.lit("提前"); ok {
		s.space()
		var d time.Duration
		amt := s.i
		if n, ok := s.number(3); ok {
			s.lit("个", "個")
			if _, ok := s.lit("天"); ok && n > 0 {
				d = time.Duration(n) * 24 * time.Hour
			} else {
				s.i = amt
			}
		}
		if d == 0 {
			var total time.Duration
			for {
				x, ok := s.hanAmount()
				if !ok {
					break
				}
				total += x
			}
			d = total
		}
		if d <= 0 {
			s.i = at
			return 0, false
		}
		s.lit("提醒我", "提醒", "通知我", "通知", "叫我")
		return d, true
	}
	s.word("remind me")
	s.space()
	d, ok := s.englishAmount()
	if !ok {
		s.i = at
		return 0, false
	}
	if _, ok := s.word("in advance", "before", "beforehand", "earlier", "early", "ahead"); !ok {
		s.i = at
		return 0, false
	}
	return d, true
}

// expr0 is expr without the advance notice.
func (s *scanner) expr0() (reading, bool) {
	at := s.i
	if rd, ok := s.recurrence(); ok {
		return rd, true
	}
	s.i = at
	if rd, ok := s.relative(); ok {
		return rd, true
	}
	s.i = at
	var rd reading
	if !s.components(&rd) {
		s.i = at
		return reading{}, false
	}
	return rd, true
}

// components reads day, part of day and clock in any order, each at most
// once, with "at", "on", "the" and commas between them.
func (s *scanner) components(rd *reading) bool {
	any := false
	for {
		at := s.i
		s.space()
		if _, ok := s.word("at", "on", "by", "around"); ok {
			s.space()
		}
		s.word("the")
		s.space()
		s.lit(",", "，", "的")
		s.space()
		switch {
		case rd.day == dayNone && s.dayWord(rd):
		case rd.part == "" && s.part(rd):
		case !rd.clk.set && s.clock(rd):
		default:
			s.i = at
			return any
		}
		any = true
	}
}

// dayWord reads a day: 今天/明天/后天/大后天, today/tomorrow, 今晚/明早,
// tonight, a weekday, a date, "N天后"/"in N days".
func (s *scanner) dayWord(rd *reading) bool {
	at := s.i
	type dw struct {
		w    string
		n    int
		part string
	}
	for _, d := range []dw{
		{"大后天", 3, ""}, {"大後天", 3, ""}, {"今天", 0, ""}, {"今日", 0, ""}, {"明天", 1, ""}, {"明日", 1, ""},
		{"后天", 2, ""}, {"後天", 2, ""}, {"今晚", 0, "night"}, {"今早", 0, "early"}, {"明早", 1, "early"},
		{"明晚", 1, "night"}, {"the day after tomorrow", 2, ""}, {"day after tomorrow", 2, ""},
		{"today", 0, ""}, {"tonight", 0, "night"}, {"tomorrow", 1, ""}, {"tmrw", 1, ""}, {"tmr", 1, ""},
		{"this morning", 0, "morning"}, {"this afternoon", 0, "afternoon"}, {"this evening", 0, "evening"},
	} {
		if _, ok := s.lit(d.w); ok {
			if d.part != "" && rd.part != "" {
				s.i = at
				return false
			}
			rd.day, rd.days = dayOffset, d.n
			if d.part != "" {
				rd.part = d.part
			}
			return true
		}
	}
	if s.monthDay(rd) || s.weekdayWord(rd) || s.date(rd) || s.dayCount(rd) {
		return true
	}
	s.i = at
	return false
}

// monthDay reads the month-relative days: 月底, 下个月底, 下个月1号,
// 下个工作日, 农历八月十五, end of the month, the 1st of next month,
// next month on the 15th.
func (s *scanner) monthDay(rd *reading) bool {
	at := s.i
	switch w, _ := s.lit("下个月底", "下個月底", "下月底", "下个月末", "下月末", "这个月底", "這個月底", "本月底", "这个月末", "本月末", "月底", "月末",
		"end of next month", "last day of next month", "end of the month", "end of this month", "end of month",
		"last day of the month", "last day of this month"); w {
	case "":
	case "下个月底", "下個月底", "下月底", "下个月末", "下月末", "end of next month", "last day of next month":
		rd.day, rd.months = dayMonthEnd, 1
		return true
	default:
		rd.day = dayMonthEnd
		return true
	}
	if _, ok := s.lit("下个月", "下個月", "下月"); ok {
		s.lit("的")
		if d, ok := s.number(2); ok {
			if _, ok := s.lit("号", "號", "日"); ok {
				rd.day, rd.months, rd.mday = dayMonthDay, 1, d
				return true
			}
		}
		s.i = at
		return false
	}
	if _, ok := s.lit("next month"); ok {
		s.word("on")
		s.word("the")
		s.space()
		if d, ok := s.digits(2); ok && s.ordinal() {
			rd.day, rd.months, rd.mday = dayMonthDay, 1, d
			return true
		}
		s.i = at
		return false
	}
	if _, ok := s.lit("下个工作日", "下個工作日", "下一个工作日", "下一個工作日"); ok {
		rd.day = dayWorkday
		return true
	}
	if _, ok := s.lit("农历", "農曆", "阴历", "陰曆"); ok {
		if m, d, ok := s.lunarDate(); ok {
			rd.day, rd.lm, rd.ld = dayLunar, m, d
			return true
		}
	}
	s.i = at
	return false
}

var hanWeekdays = map[rune]time.Weekday{'一': time.Monday, '二': time.Tuesday, '三': time.Wednesday, '四': time.Thursday,
	'五': time.Friday, '六': time.Saturday, '日': time.Sunday, '天': time.Sunday, '1': time.Monday, '2': time.Tuesday,
	'3': time.Wednesday, '4': time.Thursday, '5': time.Friday, '6': time.Saturday, '7': time.Sunday}

var englishWeekdays = []struct {
	w string
	d time.Weekday
}{
	{"monday", time.Monday}, {"tuesday", time.Tuesday}, {"wednesday", time.Wednesday}, {"thursday", time.Thursday},
	{"friday", time.Friday}, {"saturday", time.Saturday}, {"sunday", time.Sunday},
	{"tues", time.Tuesday}, {"thurs", time.Thursday}, {"thur", time.Thursday},
	{"mon", time.Monday}, {"tue", time.Tuesday}, {"wed", time.Wednesday}, {"thu", time.Thursday},
	{"fri", time.Friday}, {"sat", time.Saturday}, {"sun", time.Sunday},
}

// hanWeekPrefix reads 周/星期/礼拜 (and 个星期).
func (s *scanner) hanWeekPrefix() bool {
	_, ok := s.lit("个星期", "個星期", "个礼拜", "星期", "礼拜", "禮拜", "周", "週")
	return ok
}

func (s *scanner) weekdayWord(rd *reading) bool {
	at := s.i
	week := weekComing
	switch w, _ := s.lit("下下个", "下下", "下个", "下個", "下", "这个", "這個", "这", "這", "本"); w {
	case "下下个", "下下":
		week = weekAfterNext
	case "下个", "下個", "下":
		week = weekNext
	case "这个", "這個", "这", "這", "本":
		week = weekThis
	}
	if s.hanWeekPrefix() {
		if s.i < len(s.r) {
			if d, ok := hanWeekdays[s.r[s.i]]; ok {
				s.i++
				rd.day, rd.weekday, rd.week = dayWeekday, d, week
				return true
			}
		}
	}
	s.i = at
	week = weekComing
	// "this friday" is the coming Friday (said on a Sunday too), unlike
	// 这周五, which stays in this week.
	if w, _ := s.lit("this coming", "next", "this", "coming"); w == "next" {
		week = weekNext
	}
	s.space()
	for _, e := range englishWeekdays {
		if _, ok := s.lit(e.w); ok {
			rd.day, rd.weekday, rd.week = dayWeekday, e.d, week
			return true
		}
	}
	s.i = at
	return false
}

var englishMonths = []struct {
	w string
	m int
}{
	{"january", 1}, {"february", 2}, {"march", 3}, {"april", 4}, {"may", 5}, {"june", 6}, {"july", 7},
	{"august", 8}, {"september", 9}, {"october", 10}, {"november", 11}, {"december", 12},
	{"jan", 1}, {"feb", 2}, {"mar", 3}, {"apr", 4}, {"jun", 6}, {"jul", 7}, {"aug", 8}, {"sept", 9}, {"sep", 9},
	{"oct", 10}, {"nov", 11}, {"dec", 12},
}

func (s *scanner) monthName() (int, bool) {
	for _, e := range englishMonths {
		if _, ok := s.lit(e.w); ok {
			s.lit(".")
			return e.m, true
		}
	}
	return 0, false
}

// ordinal reads an English ordinal suffix.
func (s *scanner) ordinal() bool { _, ok := s.lit("st", "nd", "rd", "th"); return ok }

// date reads 2030年12月24日, 12月24日/号, 5号, 2030-12-24, 2030/12/24,
// 12/24, dec 24[, 2030], 24 dec, 24th of december.
func (s *scanner) date(rd *reading) bool {
	at := s.i
	// Chinese: [YYYY年] M月 D[日号] or D号.
	year := 0
	if y, ok := s.digits(4); ok && y >= 1000 {
		if _, ok := s.lit("年"); ok {
			year = y
		} else {
			s.i = at
		}
	} else {
		s.i = at
	}
	mAt := s.i
	if m, ok := s.number(2); ok {
		if _, ok := s.lit("月"); ok {
			if d, ok := s.number(2); ok {
				s.lit("日", "号", "號")
				rd.day, rd.year, rd.month, rd.mday = dayDate, year, m, d
				return true
			}
		}
	}
	s.i = mAt
	if year == 0 {
		if d, ok := s.number(2); ok {
			if _, ok := s.lit("号", "號"); ok {
				rd.day, rd.mday = dayMonthDay, d
				return true
			}
		}
	}
	s.i = at
	// Numeric: YYYY-MM-DD, YYYY/MM/DD, M/D.
	if y, ok := s.digits(4); ok {
		if sep, ok := s.lit("-", "/", "."); ok && y >= 1000 {
			if m, ok := s.digits(2); ok {
				if _, ok := s.lit(sep); ok {
					if d, ok := s.digits(2); ok {
						rd.day, rd.year, rd.month, rd.mday = dayDate, y, m, d
						return true
					}
				}
			}
		} else if ok && y <= 12 {
			s.i = at
			m, _ := s.digits(2)
			if _, ok := s.lit("/"); ok {
				if d, ok := s.digits(2); ok {
					rd.day, rd.month, rd.mday = dayDate, m, d
					if _, ok := s.lit("/"); ok {
						if y, ok := s.digits(4); ok && y >= 1000 {
							rd.year = y
						} else {
							s.i = at
							return false
						}
					}
					return true
				}
			}
		}
	}
	s.i = at
	// English: month d[th][, yyyy] or d[th] [of] month [yyyy].
	if m, ok := s.monthName(); ok {
		s.space()
		if d, ok := s.digits(2); ok {
			s.ordinal()
			rd.day, rd.month, rd.mday = dayDate, m, d
			yAt := s.i
			s.lit(",")
			s.space()
			if y, ok := s.digits(4); ok && y >= 1000 {
				rd.year = y
			} else {
				s.i = yAt
			}
			return true
		}
	}
	s.i = at
	if d, ok := s.digits(2); ok {
		ord := s.ordinal()
		oAt := s.i
		if _, ok := s.word("of next month"); ok && ord {
			rd.day, rd.months, rd.mday = dayMonthDay, 1, d
			return true
		}
		s.word("of")
		s.space()
		if m, ok := s.monthName(); ok {
			rd.day, rd.month, rd.mday = dayDate, m, d
			yAt := s.i
			s.space()
			if y, ok := s.digits(4); ok && y >= 1000 {
				rd.year = y
			} else {
				s.i = yAt
			}
			return true
		}
		if ord {
			// "on the 15th": the next 15th of a month.
			s.i = oAt
			rd.day, rd.mday = dayMonthDay, d
			return true
		}
	}
	s.i = at
	return false
}

// dayCount reads "3天后", "两周后", "1个月后", "in 3 days", "in 2 weeks".
func (s *scanner) dayCount(rd *reading) bool {
	at := s.i
	english := false
	if _, ok := s.word("in"); ok {
		english = true
		s.space()
	}
	n, ok := s.number(3)
	if !ok {
		s.i = at
		return false
	}
	s.space()
	days, months := 0, 0
	if english {
		switch w, _ := s.lit("days", "day", "weeks", "week", "months", "month"); w {
		case "days", "day":
			days = n
		case "weeks", "week":
			days = 7 * n
		case "months", "month":
			months = n
		default:
			s.i = at
			return false
		}
	} else {
		switch w, _ := s.lit("天", "日", "个星期", "個星期", "星期", "周", "週", "个礼拜", "礼拜", "个月", "個月"); w {
		case "天", "日":
			days = n
		case "":
			s.i = at
			return false
		case "个月", "個月":
			months = n
		default:
			days = 7 * n
		}
		if _, ok := s.lit("以后", "之后", "后", "以後", "之後", "後"); !ok {
			s.i = at
			return false
		}
	}
	if n == 0 || n > 5*366 {
		s.i = at
		return false
	}
	rd.day, rd.days, rd.months, rd.count = dayOffset, days, months, true
	return true
}

// parts of day and their default hours.
var partHours = map[string]int{"early": 8, "morning": 9, "noon": 12, "afternoon": 15, "dusk": 18,
	"evening": 19, "night": 20, "dawn": 2, "midnight": 0}

// part reads a part of day.
func (s *scanner) part(rd *reading) bool {
	at := s.i
	for _, p := range []struct{ w, part string }{
		{"凌晨", "dawn"}, {"早上", "early"}, {"早晨", "early"}, {"清晨", "early"}, {"上午", "morning"},
		{"中午", "noon"}, {"午间", "noon"}, {"下午", "afternoon"}, {"傍晚", "dusk"}, {"晚上", "night"},
		{"晚间", "night"}, {"夜里", "night"}, {"夜间", "night"}, {"半夜", "midnight"},
		{"in the morning", "morning"}, {"in the afternoon", "afternoon"}, {"in the evening", "evening"},
		{"at night", "night"}, {"morning", "morning"}, {"afternoon", "afternoon"}, {"evening", "evening"},
		{"night", "night"}, {"noon", "noon"}, {"midday", "noon"}, {"midnight", "midnight"},
	} {
		if _, ok := s.lit(p.w); ok {
			rd.part = p.part
			return true
		}
	}
	s.i = at
	return false
}

// clock reads a time of day: 3点, 三点一刻, 十点半, 10点05分, 15:30[:00],
// 3pm, 3:30 p.m., 9 o'clock, and (after "at") a bare hour.
func (s *scanner) clock(rd *reading) bool {
	at := s.i
	afterAt := at > 0 && s.precededBy("at")
	h, ok := s.number(2)
	if !ok {
		s.i = at
		return false
	}
	c := clock{set: true, h: h}
	if _, ok := s.lit(":"); ok {
		m, ok := s.digits(2)
		if !ok {
			s.i = at
			return false
		}
		c.m = m
		if _, ok := s.lit(":"); ok {
			sec, ok := s.digits(2)
			if !ok {
				s.i = at
				return false
			}
			c.sec, c.hasSeconds = sec, true
		}
	} else if s.hanClockMark() {
		// Spaces may stand around 点 ("下午 3 点 30 分"); minutes after a
		// space need their 分.
		afterMark := s.i
		s.space()
		spaced := s.i > afterMark
		switch w, _ := s.lit("半", "一刻", "三刻", "整"); w {
		case "半":
			c.m = 30
		case "一刻":
			c.m = 15
		case "三刻":
			c.m = 45
		case "整":
		default:
			mAt := s.i
			s.lit("零", "〇")
			if m, ok := s.number(2); ok && m < 60 {
				s.space()
				if _, ok := s.lit("分钟", "分"); !ok {
					if spaced {
						s.i = afterMark
						break
					}
					s.i = mAt
					s.lit("零", "〇")
					s.number(2)
					// "3点05": minutes without 分, unless a unit follows
					// ("3点30秒", "3点两天"): that is not a clock.
					if s.i < len(s.r) && strings.ContainsRune("点點时時秒天周月号號个", s.r[s.i]) {
						s.i = at
						return false
					}
				}
				c.m = m
			} else {
				s.i = afterMark
			}
		}
	} else if _, ok := s.word("o'clock", "oclock"); !ok {
		// An English hour needs am/pm after it, or "at" before it.
		if !s.peekMeridiem() && !afterAt {
			s.i = at
			return false
		}
	}
	// am/pm.
	mAt := s.i
	s.space()
	if w, ok := s.lit("a.m.", "p.m.", "am", "pm", "a.m", "p.m"); ok {
		if c.h < 1 || c.h > 12 {
			s.i = at
			return false
		}
		pm := strings.HasPrefix(w, "p")
		switch {
		case pm && c.h < 12:
			c.h += 12
		case !pm && c.h == 12:
			c.h = 0
		}
		if rd.part == "" {
			rd.part = "meridiem"
		}
	} else {
		s.i = mAt
	}
	if c.h > 24 || c.m > 59 || c.sec > 59 || (c.h == 24 && (c.m > 0 || c.sec > 0)) {
		s.i = at
		return false
	}
	rd.clk = c
	return true
}

// hanClockMark reads 点/点钟/时 after an hour, spaces allowed before it.
func (s *scanner) hanClockMark() bool {
	at := s.i
	s.space()
	if _, ok := s.lit("点钟", "點鐘", "点", "點", "时", "時"); ok {
		return true
	}
	s.i = at
	return false
}

// precededBy reports whether the word w (and spaces) ends just before the
// position.
func (s *scanner) precededBy(w string) bool {
	j := s.i
	for j > 0 && unicode.IsSpace(s.r[j-1]) {
		j--
	}
	wr := []rune(w)
	return j >= len(wr) && string(s.r[j-len(wr):j]) == w && (j == len(wr) || !isASCIILetter(s.r[j-len(wr)-1]))
}

func (s *scanner) peekMeridiem() bool {
	at := s.i
	s.space()
	_, ok := s.lit("a.m.", "p.m.", "am", "pm", "a.m", "p.m")
	s.i = at
	return ok
}

// relative reads elapsed time: 10分钟后, 半小时后, 一个半小时后, 1小时30分钟后,
// in 10 minutes, in half an hour, in an hour and a half, 10 minutes later.
func (s *scanner) relative() (reading, bool) {
	at := s.i
	if _, ok := s.word("in", "after"); ok {
		s.space()
		d, ok := s.englishAmount()
		if !ok {
			s.i = at
			return reading{}, false
		}
		return reading{delay: d}, true
	}
	if d, ok := s.englishAmount(); ok {
		if _, ok := s.word("later", "from now"); ok {
			return reading{delay: d}, true
		}
	}
	s.i = at
	_, pass := s.lit("过", "過")
	var total time.Duration
	for {
		d, ok := s.hanAmount()
		if !ok {
			break
		}
		total += d
	}
	if total == 0 {
		s.i = at
		return reading{}, false
	}
	if _, ok := s.lit("以后", "之后", "后", "以後", "之後", "後"); !ok && !pass {
		s.i = at
		return reading{}, false
	}
	return reading{delay: total}, true
}

// hanAmount reads one "N unit" of a Chinese relative time, hours and
// below (days belong to dayCount): 10分钟, 半小时, 一个半小时, 两个钟头, 一刻钟.
func (s *scanner) hanAmount() (time.Duration, bool) {
	at := s.i
	half := false
	n, ok := s.number(4)
	if _, h := s.lit("半"); h && !ok {
		n, ok, half = 0, true, true
	}
	if !ok {
		if _, ok := s.lit("半"); !ok {
			s.i = at
			return 0, false
		}
		half = true
	}
	s.lit("个", "個")
	if _, h := s.lit("半"); h {
		half = true
	}
	var unit time.Duration
	switch w, _ := s.lit("小时", "小時", "钟头", "鐘頭", "分钟", "分鐘", "分", "刻钟", "刻鐘", "秒钟", "秒鐘", "秒"); w {
	case "小时", "小時", "钟头", "鐘頭":
		unit = time.Hour
	case "分钟", "分鐘", "分":
		unit = time.Minute
	case "刻钟", "刻鐘":
		unit = 15 * time.Minute
	case "秒钟", "秒鐘", "秒":
		unit = time.Second
	default:
		s.i = at
		return 0, false
	}
	d := time.Duration(n) * unit
	if half {
		d += unit / 2
	}
	if d == 0 || n > 100000 {
		s.i = at
		return 0, false
	}
	return d, true
}

// englishAmount reads "10 minutes", "an hour", "half an hour", "2 hours
// and 30 minutes", "an hour and a half", "1h30m" (the duration grammar).
func (s *scanner) englishAmount() (time.Duration, bool) {
	at := s.i
	var total time.Duration
	for k := 0; ; k++ {
		before := s.i
		if k > 0 {
			s.word("and")
			s.space()
			if _, ok := s.lit("a half"); ok && total > 0 {
				total += s.lastUnit(total) / 2
				continue
			}
		}
		d, ok := s.englishOne()
		if !ok {
			s.i = before
			break
		}
		total += d
	}
	if total == 0 {
		s.i = at
		return 0, false
	}
	return total, true
}

// lastUnit is the largest unit that divides d (for "an hour and a half").
func (s *scanner) lastUnit(d time.Duration) time.Duration {
	for _, u := range []time.Duration{time.Hour, time.Minute, time.Second} {
		if d%u == 0 {
			return u
		}
	}
	return time.Second
}

func (s *scanner) englishOne() (time.Duration, bool) {
	at := s.i
	s.space()
	// The compact grammar: 1h30m, 90m, 2d.
	j := s.i
	for j < len(s.r) && (isASCIIDigit(s.r[j]) || isASCIILetter(s.r[j])) {
		j++
	}
	if j > s.i && isASCIIDigit(s.r[s.i]) {
		if d, err := ParseDuration(string(s.r[s.i:j])); err == nil && d > 0 && (j == len(s.r) || !isASCIILetter(s.r[j])) {
			s.i = j
			return d, true
		}
	}
	half := false
	if _, ok := s.lit("half an", "half a"); ok {
		half = true
	}
	n := 1
	if !half {
		v, ok := s.amount(4)
		if !ok {
			s.i = at
			return 0, false
		}
		n = v
	}
	s.space()
	var unit time.Duration
	switch w, _ := s.lit("seconds", "second", "secs", "sec", "minutes", "minute", "mins", "min", "hours", "hour", "hrs", "hr"); w {
	case "seconds", "second", "secs", "sec":
		unit = time.Second
	case "minutes", "minute", "mins", "min":
		unit = time.Minute
	case "hours", "hour", "hrs", "hr":
		unit = time.Hour
	default:
		s.i = at
		return 0, false
	}
	if half {
		return unit / 2, true
	}
	if n <= 0 || n > 100000 {
		s.i = at
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// recurrence reads 每天8点, 每周一三五 9:00, 每月1号, 每年12月24日, 工作日 9点,
// 每2小时, every day at 8, every weekday 9am, every monday and friday,
// every month on the 1st, every 2 hours, hourly.
func (s *scanner) recurrence() (reading, bool) {
	at := s.i
	var rd reading
	switch {
	case s.hanRecurrence(&rd), s.englishRecurrence(&rd):
	default:
		s.i = at
		return reading{}, false
	}
	var tod reading
	tAt := s.i
	s.components(&tod)
	if rd.rec == recEvery {
		// An interval with a time of day: a whole number of days starts
		// at the next such time ("every other day at 7am"); anything else
		// is refused with a hint, never left in the text.
		switch {
		case tod.day != dayNone:
			rd.hint = errIntervalClock
		case !tod.clk.set && tod.part == "":
			s.i = tAt
		case rd.every%(24*time.Hour) != 0:
			rd.hint = errIntervalClock
		default:
			rd.part, rd.clk = tod.part, tod.clk
		}
		return rd, true
	}
	if tod.day != dayNone {
		s.i = at
		return reading{}, false
	}
	if rd.part != "" && tod.part != "" {
		s.i = at
		return reading{}, false
	}
	if tod.part != "" {
		rd.part = tod.part
	}
	rd.clk = tod.clk
	return rd, true
}

func (s *scanner) hanRecurrence(rd *reading) bool {
	at := s.i
	if _, ok := s.lit("每个工作日", "每個工作日", "每工作日", "工作日", "每周工作日"); ok {
		// China's working days: holidays skipped, 调休 included.
		rd.rec = recWorkdayCN
		return true
	}
	if _, ok := s.lit("隔天", "隔一天"); ok {
		rd.rec, rd.every = recEvery, 48*time.Hour
		return true
	}
	if _, ok := s.lit("每个周末", "每個週末", "每周末", "每週末"); ok {
		rd.rec, rd.dows = recWeekdays, []int{0, 6}
		return true
	}
	if _, ok := s.lit("每天", "每日", "天天", "每一天"); ok {
		rd.rec = recDaily
		return true
	}
	if _, ok := s.lit("每晚"); ok {
		rd.rec, rd.part = recDaily, "night"
		return true
	}
	if _, ok := s.lit("每早"); ok {
		rd.rec, rd.part = recDaily, "early"
		return true
	}
	if _, ok := s.lit("每"); !ok {
		s.i = at
		return false
	}
	s.lit("个", "個")
	wAt := s.i
	if s.hanWeekPrefix() {
		var dows []int
		for s.i < len(s.r) {
			d, ok := hanWeekdays[s.r[s.i]]
			if !ok {
				break
			}
			s.i++
			dows = append(dows, int(d))
			if _, ok := s.lit("到", "至", "-", "~"); ok {
				s.hanWeekPrefix()
				if s.i < len(s.r) {
					if e, ok := hanWeekdays[s.r[s.i]]; ok {
						s.i++
						dows = dowRange(dows[len(dows)-1], int(e), dows[:len(dows)-1])
						continue
					}
				}
				s.i = at
				return false
			}
			if _, ok := s.lit("、", ",", "，", "和", "及"); ok {
				s.hanWeekPrefix()
			}
		}
		if len(dows) == 0 {
			s.i = at
			return false
		}
		rd.rec, rd.dows = recWeekdays, dows
		return true
	}
	s.i = wAt
	if _, ok := s.lit("月"); ok {
		s.lit("的")
		if _, ok := s.lit("最后一天", "最後一天", "月底", "月末", "底", "末"); ok {
			rd.rec = recMonthLast
			return true
		}
		nth := 0
		if _, ok := s.lit("最后一个", "最後一個", "最后一", "最後一", "最后", "最後"); ok {
			nth = -1
		} else if _, ok := s.lit("第"); ok {
			n, ok := s.number(1)
			if !ok || n < 1 || n > 5 {
				s.i = at
				return false
			}
			nth = n
			s.lit("个", "個")
		}
		if nth != 0 {
			if !s.hanWeekPrefix() || s.i >= len(s.r) {
				s.i = at
				return false
			}
			wd, ok := hanWeekdays[s.r[s.i]]
			if !ok {
				s.i = at
				return false
			}
			s.i++
			rd.rec, rd.nth, rd.dows = recNthWeekday, nth, []int{int(wd)}
			return true
		}
		d, ok := s.number(2)
		if !ok {
			s.i = at
			return false
		}
		s.lit("号", "號", "日")
		rd.rec, rd.mday = recMonthly, d
		return true
	}
	if _, ok := s.lit("年"); ok {
		s.lit("的")
		if _, ok := s.lit("农历", "農曆", "阴历", "陰曆"); ok {
			_, birthday := s.lit("生日")
			s.space()
			m, d, ok := s.lunarDate()
			if !ok {
				if birthday {
					rd.rec, rd.hint = recLunarYearly, errLunarNeedsDate
					return true
				}
				s.i = at
				return false
			}
			rd.rec, rd.lm, rd.ld = recLunarYearly, m, d
			return true
		}
		var dr reading
		if !s.date(&dr) || dr.day != dayDate || dr.year != 0 {
			s.i = at
			return false
		}
		rd.rec, rd.month, rd.mday = recYearly, dr.month, dr.mday
		return true
	}
	// 每(隔)N(个)unit, 每小时.
	_, skip := s.lit("隔")
	n, ok := s.number(4)
	if !ok {
		n = 1
	}
	s.lit("个", "個")
	var unit time.Duration
	switch w, _ := s.lit("小时", "小時", "钟头", "分钟", "分鐘", "秒钟", "秒", "天", "日", "星期", "周", "週"); w {
	case "小时", "小時", "钟头":
		unit = time.Hour
	case "分钟", "分鐘":
		unit = time.Minute
	case "秒钟", "秒":
		unit = time.Second
	case "天", "日":
		unit = 24 * time.Hour
	case "星期", "周", "週":
		unit = 7 * 24 * time.Hour
	default:
		s.i = at
		return false
	}
	if n <= 0 {
		s.i = at
		return false
	}
	if skip && unit >= 24*time.Hour {
		// 每隔一天 skips one day: every other day. 每隔两天 is read as
		// every 2 or every 3 days by different people: refused.
		if n != 1 {
			rd.rec, rd.every, rd.hint = recEvery, time.Duration(n)*unit, errIntervalAmbig
			return true
		}
		n = 2
	}
	rd.rec, rd.every = recEvery, time.Duration(n)*unit
	return true
}

// dowRange expands from..to (a week wraps) after prefix.
func dowRange(from, to int, prefix []int) []int {
	out := append([]int(nil), prefix...)
	for d := from; ; d = (d + 1) % 7 {
		out = append(out, d)
		if d == to || len(out) > 14 {
			return out
		}
	}
}

// englishOrdinal reads first..fifth, 1st..5th or last (-1).
func (s *scanner) englishOrdinal() (int, bool) {
	for _, e := range []struct {
		w string
		n int
	}{{"first", 1}, {"1st", 1}, {"second", 2}, {"2nd", 2}, {"third", 3}, {"3rd", 3}, {"fourth", 4}, {"4th", 4},
		{"fifth", 5}, {"5th", 5}, {"last", -1}} {
		if _, ok := s.lit(e.w); ok {
			return e.n, true
		}
	}
	return 0, false
}

// monthlyDay reads "last day" or "<ordinal> <weekday>" of a monthly rule.
func (s *scanner) monthlyDay(rd *reading) bool {
	at := s.i
	nth, ok := s.englishOrdinal()
	if !ok {
		return false
	}
	s.space()
	if _, ok := s.lit("day"); ok && nth == -1 {
		rd.rec = recMonthLast
		return true
	}
	for _, e := range englishWeekdays {
		if _, ok := s.lit(e.w); ok {
			rd.rec, rd.nth, rd.dows = recNthWeekday, nth, []int{int(e.d)}
			return true
		}
	}
	s.i = at
	return false
}

// englishMonthRule reads "[on] [the] last day of every month", "the third
// friday of each month", "last friday of every month".
func (s *scanner) englishMonthRule(rd *reading) bool {
	at := s.i
	s.word("on")
	s.word("the")
	s.space()
	if !s.monthlyDay(rd) {
		s.i = at
		return false
	}
	if _, ok := s.word("of every month", "of each month", "every month", "each month"); !ok {
		s.i = at
		*rd = reading{}
		return false
	}
	return true
}

func (s *scanner) englishRecurrence(rd *reading) bool {
	at := s.i
	if s.englishMonthRule(rd) {
		return true
	}
	if _, ok := s.lit("hourly"); ok {
		rd.rec, rd.every = recEvery, time.Hour
		return true
	}
	if _, ok := s.lit("daily"); ok {
		rd.rec = recDaily
		return true
	}
	if _, ok := s.lit("weekdays", "every weekday", "every workday", "each weekday", "every work day"); ok {
		rd.rec, rd.dows = recWeekdays, []int{1, 2, 3, 4, 5}
		return true
	}
	if _, ok := s.lit("weekends", "every weekend"); ok {
		rd.rec, rd.dows = recWeekdays, []int{0, 6}
		return true
	}
	if _, ok := s.lit("monthly"); ok {
		s.word("on")
		s.word("the")
		s.space()
		if s.monthlyDay(rd) {
			return true
		}
		d, ok := s.digits(2)
		if !ok {
			s.i = at
			return false
		}
		s.ordinal()
		rd.rec, rd.mday = recMonthly, d
		return true
	}
	if _, ok := s.lit("every", "each"); !ok {
		s.i = at
		return false
	}
	s.space()
	if _, ok := s.lit("day"); ok {
		rd.rec = recDaily
		return true
	}
	for _, p := range []struct{ w, part string }{{"morning", "morning"}, {"afternoon", "afternoon"}, {"evening", "evening"}, {"night", "night"}} {
		if _, ok := s.lit(p.w); ok {
			rd.rec, rd.part = recDaily, p.part
			return true
		}
	}
	if _, ok := s.lit("month"); ok {
		s.word("on")
		s.word("the")
		s.space()
		if s.monthlyDay(rd) {
			return true
		}
		d, ok := s.digits(2)
		if !ok {
			s.i = at
			return false
		}
		s.ordinal()
		rd.rec, rd.mday = recMonthly, d
		return true
	}
	if _, ok := s.lit("other day"); ok {
		rd.rec, rd.every = recEvery, 48*time.Hour
		return true
	}
	if _, ok := s.lit("other week"); ok {
		rd.rec, rd.every = recEvery, 14*24*time.Hour
		return true
	}
	// every monday[, wednesday and friday]
	var dows []int
	for {
		found := false
		for _, e := range englishWeekdays {
			if _, ok := s.lit(e.w); ok {
				s.lit("s")
				dows = append(dows, int(e.d))
				found = true
				break
			}
		}
		if !found {
			break
		}
		cAt := s.i
		s.space()
		if _, ok := s.lit(",", "and", "&", "/"); ok {
			s.space()
			s.word("and")
			s.space()
			continue
		}
		s.i = cAt
		break
	}
	if len(dows) > 0 {
		rd.rec, rd.dows = recWeekdays, dows
		return true
	}
	// every N units, every hour.
	n, ok := s.number(4)
	if !ok {
		n = 1
	}
	s.space()
	var unit time.Duration
	switch w, _ := s.lit("seconds", "second", "minutes", "minute", "mins", "min", "hours", "hour", "hrs", "hr", "days", "day", "weeks", "week"); w {
	case "seconds", "second":
		unit = time.Second
	case "minutes", "minute", "mins", "min":
		unit = time.Minute
	case "hours", "hour", "hrs", "hr":
		unit = time.Hour
	case "days", "day":
		unit = 24 * time.Hour
	case "weeks", "week":
		unit = 7 * 24 * time.Hour
	default:
		s.i = at
		return false
	}
	if n <= 0 {
		s.i = at
		return false
	}
	rd.rec, rd.every = recEvery, time.Duration(n)*unit
	return true
}

// hourOf applies the part of day to the clock's hour and returns the hour
// on a 24-hour clock and a day shift (midnight is the next day's 0:00).
// ambiguous reports an hour 1-11 with nothing saying morning or evening.
func hourOf(part string, c clock) (h, shift int, ambiguous, ok bool) {
	if !c.set {
		h, known := partHours[part]
		if part == "" || part == "meridiem" {
			return 9, 0, false, true
		}
		if !known {
			return 0, 0, false, false
		}
		if part == "midnight" {
			return 0, 1, false, true
		}
		return h, 0, false, true
	}
	h = c.h
	if h == 24 {
		return 0, 1, false, true
	}
	switch part {
	case "", "meridiem":
		return h, 0, part == "" && h >= 1 && h <= 11, true
	case "dawn", "early", "morning":
		if h > 12 {
			return 0, 0, false, false
		}
		if h == 12 && part == "dawn" {
			h = 0
		}
		return h, 0, false, true
	case "noon":
		switch {
		case h >= 11 && h <= 12:
			return h, 0, false, true
		case h >= 1 && h <= 3:
			return h + 12, 0, false, true
		}
		return 0, 0, false, false
	case "afternoon", "dusk", "evening", "night":
		switch {
		case h == 12 && (part == "night" || part == "evening"):
			return 0, 1, false, true
		case h >= 1 && h <= 4 && part == "night":
			return h, 1, false, true // "晚上1点", "tonight at 1": after midnight
		case h < 12:
			return h + 12, 0, false, true
		}
		return h, 0, false, true // "下午15点": already on the 24-hour clock
	case "midnight":
		if h == 12 || h == 0 {
			return 0, 1, false, true
		}
		return h, 0, false, true // "半夜2点"
	}
	return 0, 0, false, false
}

// resolve applies now and the zone to a reading, then its advance notice.
func (rd reading) resolve(in ScheduleInput) (Natural, error) {
	if rd.hint != nil {
		return Natural{}, rd.hint
	}
	n, err := rd.resolveAt(in)
	if err != nil || rd.advance == 0 {
		return n, err
	}
	return n.early(rd.advance, in)
}

// early moves a reading d earlier: an instant or a start, a delay, or
// each occurrence of a rule (a calendar spec with "early").
func (n Natural) early(d time.Duration, in ScheduleInput) (Natural, error) {
	if d > maxEarly {
		return Natural{}, errAdvanceTooLong
	}
	switch {
	case n.Rule != nil && n.Rule.Kind != KindEvery:
		r, ok := withEarly(*n.Rule, d)
		if !ok {
			return Natural{}, errAdvanceTooLong
		}
		n.Rule = &r
	case n.Time != nil:
		ts := *n.Time
		ts.At, ts.Adjust = ts.At.Add(-d), AdjustNone
		n.Time = &ts
	case n.Rule != nil:
		// An elapsed interval ("every 2 hours") has no time to come early to.
		return Natural{}, errAdvanceTooLong
	case n.Delay > 0:
		if d >= n.Delay {
			return Natural{}, errAdvanceTooLong
		}
		n.Delay -= d
	}
	return n, nil
}

// resolveAt applies now and the zone to a reading.
func (rd reading) resolveAt(in ScheduleInput) (Natural, error) {
	if rd.delay > 0 {
		return Natural{Delay: rd.delay}, nil
	}
	if rd.rec != recNone {
		return rd.rule(in)
	}
	loc := in.Zone
	now := in.Now.Truncate(time.Second)
	local := now.In(loc)
	h, shift, ambiguous, ok := hourOf(rd.part, rd.clk)
	if !ok {
		return Natural{}, errNatural
	}
	m, sec := rd.clk.m, rd.clk.sec
	if rd.count && !rd.clk.set && rd.part == "" {
		// "3天后": the same wall clock that day.
		h, m, sec = local.Hour(), local.Minute(), local.Second()
	}
	at := func(y, mo, d, hh int) (TimeSpec, bool) {
		t := time.Date(y, time.Month(mo), d+shift, 0, 0, 0, 0, time.UTC)
		w := Wall{t.Year(), int(t.Month()), t.Day(), hh, m, sec}
		if !validWall(w) {
			return TimeSpec{}, false
		}
		inst, adj := Resolve(w, loc)
		return TimeSpec{At: inst, Adjust: adj, Requested: w, Legacy: true}, true
	}
	// The hours to try: an ambiguous hour without a day may be h or h+12.
	hours := []int{h}
	if ambiguous && rd.day == dayNone {
		hours = append(hours, h+12)
	}
	// first is the earliest candidate after now, else the last one (whose
	// time has passed: the plan answers time_passed).
	first := func(days []time.Time) (Natural, error) {
		var best *TimeSpec
		var last TimeSpec
		for _, d := range days {
			for _, hh := range hours {
				ts, ok := at(d.Year(), int(d.Month()), d.Day(), hh)
				if !ok {
					continue
				}
				last = ts
				if ts.At.After(now) && (best == nil || ts.At.Before(best.At)) {
					c := ts
					best = &c
				}
			}
			if best != nil {
				return Natural{Time: best}, nil
			}
		}
		if last.At.IsZero() {
			return Natural{}, errNatural
		}
		return Natural{Time: &last}, nil
	}
	today := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
	switch rd.day {
	case dayNone:
		return first([]time.Time{today, today.AddDate(0, 0, 1)})
	case dayOffset:
		d := today.AddDate(0, 0, rd.days)
		if rd.months > 0 {
			d = addMonthsClamped(today, rd.months)
		}
		return first([]time.Time{d})
	case dayWeekday:
		monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
		dayIn := func(week int) time.Time { return monday.AddDate(0, 0, 7*week+(int(rd.weekday)+6)%7) }
		switch rd.week {
		case weekThis:
			return first([]time.Time{dayIn(0)})
		case weekNext:
			return first([]time.Time{dayIn(1)})
		case weekAfterNext:
			return first([]time.Time{dayIn(2)})
		}
		d := today.AddDate(0, 0, (int(rd.weekday)-int(today.Weekday())+7)%7)
		return first([]time.Time{d, d.AddDate(0, 0, 7)})
	case dayDate:
		if rd.month < 1 || rd.month > 12 || rd.mday < 1 || rd.mday > 31 {
			return Natural{}, errNatural
		}
		if rd.year != 0 {
			if rd.mday > daysIn(rd.year, rd.month) {
				return Natural{}, errNatural
			}
			return first([]time.Time{time.Date(rd.year, time.Month(rd.month), rd.mday, 0, 0, 0, 0, time.UTC)})
		}
		var days []time.Time
		for y := local.Year(); y <= local.Year()+8 && len(days) < 2; y++ {
			if rd.mday <= daysIn(y, rd.month) {
				days = append(days, time.Date(y, time.Month(rd.month), rd.mday, 0, 0, 0, 0, time.UTC))
			}
		}
		if len(days) == 0 {
			return Natural{}, errNatural
		}
		return first(days)
	case dayMonthEnd:
		this := dateOf(today)
		if rd.months > 0 {
			return first([]time.Time{lastDayOf(dateOf(addMonthsClamped(today.AddDate(0, 0, 1-today.Day()), rd.months))).time()})
		}
		next := dateOf(today.AddDate(0, 0, 1-today.Day()).AddDate(0, 1, 0))
		return first([]time.Time{lastDayOf(this).time(), lastDayOf(next).time()})
	case dayWorkday:
		d, ok := nextCNWorkday(dateOf(today).add(1), CalendarLastYear())
		if !ok {
			return Natural{}, errCalendarRange
		}
		return first([]time.Time{d.time()})
	case dayLunar:
		d1, ok := nextLunar(dateOf(today), rd.lm, rd.ld)
		if !ok {
			return Natural{}, errNatural
		}
		days := []time.Time{d1.time()}
		if d2, ok := nextLunar(d1.add(1), rd.lm, rd.ld); ok {
			days = append(days, d2.time())
		}
		return first(days)
	case dayMonthDay:
		if rd.mday < 1 || rd.mday > 31 {
			return Natural{}, errNatural
		}
		if rd.months > 0 {
			mo := today.AddDate(0, 0, 1-today.Day()).AddDate(0, rd.months, 0)
			if rd.mday > daysIn(mo.Year(), int(mo.Month())) {
				return Natural{}, errNatural
			}
			return first([]time.Time{mo.AddDate(0, 0, rd.mday-1)})
		}
		var days []time.Time
		for k := 0; k < 13 && len(days) < 2; k++ {
			mo := time.Date(local.Year(), local.Month()+time.Month(k), 1, 0, 0, 0, 0, time.UTC)
			if rd.mday <= daysIn(mo.Year(), int(mo.Month())) {
				days = append(days, mo.AddDate(0, 0, rd.mday-1))
			}
		}
		return first(days)
	}
	return Natural{}, errNatural
}

// addMonthsClamped adds n calendar months, keeping the day within the
// target month (1月31日 + 1 month = 2月28/29日).
func addMonthsClamped(d time.Time, n int) time.Time {
	first := time.Date(d.Year(), d.Month()+time.Month(n), 1, 0, 0, 0, 0, time.UTC)
	day := min(d.Day(), daysIn(first.Year(), int(first.Month())))
	return first.AddDate(0, 0, day-1)
}

// rule maps a recurrence reading onto the forms the service stores: a
// 5-field cron expression in the zone, or @every.
func (rd reading) rule(in ScheduleInput) (Natural, error) {
	minEvery := in.MinEvery
	if minEvery <= 0 {
		minEvery = DefaultMinEvery
	}
	var expr string
	switch rd.rec {
	case recMonthLast, recNthWeekday, recWorkdayCN, recLunarYearly:
		return rd.calendarRule(in)
	}
	if rd.rec == recEvery && (rd.clk.set || rd.part != "") {
		return rd.everyDaysAt(in)
	}
	if rd.rec == recEvery {
		expr = "@every " + FormatDuration(rd.every)
	} else {
		h, shift, _, ok := hourOf(rd.part, rd.clk)
		if !ok || shift != 0 || rd.clk.sec != 0 {
			return Natural{}, errNatural
		}
		mh := strconv.Itoa(rd.clk.m) + " " + strconv.Itoa(h)
		switch rd.rec {
		case recDaily:
			expr = mh + " * * *"
		case recWeekdays:
			var parts []string
			seen := map[int]bool{}
			for _, d := range rd.dows {
				if !seen[d] {
					seen[d] = true
					parts = append(parts, strconv.Itoa(d))
				}
			}
			expr = mh + " * * " + strings.Join(parts, ",")
			if strings.Join(parts, ",") == "1,2,3,4,5" {
				expr = mh + " * * 1-5"
			}
		case recMonthly:
			if rd.mday < 1 || rd.mday > 31 {
				return Natural{}, errNatural
			}
			expr = mh + " " + strconv.Itoa(rd.mday) + " * *"
		case recYearly:
			if rd.month < 1 || rd.month > 12 || rd.mday < 1 || rd.mday > daysIn(2000, rd.month) {
				return Natural{}, errNatural
			}
			expr = mh + " " + strconv.Itoa(rd.mday) + " " + strconv.Itoa(rd.month) + " *"
		}
	}
	r, err := ParseRecurrence(expr, minEvery)
	if err != nil {
		return Natural{}, err
	}
	return Natural{Rule: &r}, nil
}

// everyDaysAt is "every other day at 7am": every n days at that wall
// time (DST does not move it), from the next such time.
func (rd reading) everyDaysAt(in ScheduleInput) (Natural, error) {
	h, shift, _, ok := hourOf(rd.part, rd.clk)
	if !ok || shift != 0 || rd.clk.sec != 0 || rd.every%(24*time.Hour) != 0 {
		return Natural{}, errIntervalClock
	}
	next := nextClock(Wall{Hour: h, Minute: rd.clk.m}, in.Now.Truncate(time.Second), in.Zone)
	c := &calRule{base: "days", every: int(rd.every / (24 * time.Hour)), h: h, m: rd.clk.m,
		anchor: date{next.Requested.Year, next.Requested.Month, next.Requested.Day}}
	r := calendarRule(c)
	return Natural{Rule: &r}, nil
}

// calendarRule maps the rules cron cannot express onto a calendar spec.
func (rd reading) calendarRule(in ScheduleInput) (Natural, error) {
	h, shift, _, ok := hourOf(rd.part, rd.clk)
	if !ok || shift != 0 || rd.clk.sec != 0 {
		return Natural{}, errNatural
	}
	c := &calRule{h: h, m: rd.clk.m}
	switch rd.rec {
	case recMonthLast:
		c.base = "last-day"
	case recNthWeekday:
		c.base, c.nth, c.wd = "nth", rd.nth, time.Weekday(rd.dows[0])
	case recWorkdayCN:
		c.base, c.lastYear = "workdays", CalendarLastYear()
	case recLunarYearly:
		if _, ok := lunarSolar(2000, rd.lm, rd.ld); !ok {
			return Natural{}, errNatural
		}
		c.base, c.lm, c.ld = "lunar", rd.lm, rd.ld
	}
	r := calendarRule(c)
	if r.beyondCalendar(in.Now, in.Zone) {
		return Natural{}, errCalendarRange
	}
	return Natural{Rule: &r}, nil
}
