package when

import (
	"errors"
	"strconv"
	"time"

	"github.com/6tail/lunar-go/HolidayUtil"
	"github.com/6tail/lunar-go/calendar"
)

// China's working calendar (legal holidays and make-up working days, 调休)
// and lunar dates come from github.com/6tail/lunar-go, never from a table
// typed here: a newer library version extends the coverage with no change
// to this package.

// errCalendarRange: a working day the library's holiday data does not
// cover; refused (calendar_range) rather than guessed from the weekday.
var errCalendarRange = errors.New("schenotify: date beyond the working calendar")

// calendarFirstYear is the first year the library's holiday data covers.
const calendarFirstYear = 2002

// calendarSearchEnd bounds the search for the last covered year.
const calendarSearchEnd = 2200

// CalendarLastYear is the last year of China's working calendar that the
// holiday library covers (the year of its newest published schedule). A
// working day after that year is refused with calendar_range.
func CalendarLastYear() int {
	// The covered years are contiguous from calendarFirstYear: a binary
	// search asks the data about 8 years instead of every one.
	lo, hi := calendarFirstYear, calendarSearchEnd // lo covered, hi not
	if HolidayUtil.GetHolidaysByYear(lo).Len() == 0 {
		return 0
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if HolidayUtil.GetHolidaysByYear(mid).Len() > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// date is a calendar day, free of zones.
type date struct{ y, m, d int }

func dateOf(t time.Time) date { return date{t.Year(), int(t.Month()), t.Day()} }

func (d date) time() time.Time { return time.Date(d.y, time.Month(d.m), d.d, 0, 0, 0, 0, time.UTC) }

func (d date) add(days int) date { return dateOf(d.time().AddDate(0, 0, days)) }

func (d date) before(e date) bool { return d.time().Before(e.time()) }

func (d date) weekday() time.Weekday { return d.time().Weekday() }

// cnWorkday reports whether d is a working day in mainland China: a
// make-up working day (调休) is one, a legal holiday is not, otherwise
// Monday to Friday are. covered is false after lastYear.
func cnWorkday(d date, lastYear int) (work, covered bool) {
	if d.y > lastYear || d.y < calendarFirstYear {
		return false, false
	}
	if h := HolidayUtil.GetHolidayByYmd(d.y, d.m, d.d); h != nil {
		return h.IsWork(), true
	}
	wd := d.weekday()
	return wd != time.Saturday && wd != time.Sunday, true
}

// nextCNWorkday is the first working day on or after d; ok is false when
// the search leaves the covered years.
func nextCNWorkday(d date, lastYear int) (date, bool) {
	for k := 0; k < 60; k++ {
		work, covered := cnWorkday(d, lastYear)
		if !covered {
			return date{}, false
		}
		if work {
			return d, true
		}
		d = d.add(1)
	}
	return date{}, false
}

// lunarSolar is the solar date of lunar year ly, month lm (1-12), day ld
// (1-30). A day past the month's end (三十 of a 29-day month) falls on the
// month's last day, as such birthdays are kept. ok is false outside the
// library's range.
func lunarSolar(ly, lm, ld int) (d date, ok bool) {
	defer func() {
		if recover() != nil {
			d, ok = date{}, false
		}
	}()
	if ly < 1 || ly > 9998 || lm < 1 || lm > 12 || ld < 1 || ld > 30 {
		return date{}, false
	}
	m := calendar.NewLunarYear(ly).GetMonth(lm)
	if m == nil {
		return date{}, false
	}
	ld = min(ld, m.GetDayCount())
	s := calendar.NewLunarFromYmd(ly, lm, ld).GetSolar()
	return date{s.GetYear(), s.GetMonth(), s.GetDay()}, true
}

// nextLunar is the first solar day on or after d that is lunar month lm,
// day ld.
func nextLunar(d date, lm, ld int) (date, bool) {
	best, found := date{}, false
	for ly := d.y - 1; ly <= d.y+1; ly++ {
		s, ok := lunarSolar(ly, lm, ld)
		if ok && !s.before(d) && (!found || s.before(best)) {
			best, found = s, true
		}
	}
	return best, found
}

// lastDayOf is the last day of d's month.
func lastDayOf(d date) date { return date{d.y, d.m, daysIn(d.y, d.m)} }

// nthWeekday is the nth (1-5, or -1 for the last) weekday wd of month m
// of year y; ok is false when the month has no such day (a fifth Friday).
func nthWeekday(y, m, nth int, wd time.Weekday) (date, bool) {
	if nth < 0 {
		last := date{y, m, daysIn(y, m)}
		back := (int(last.weekday()) - int(wd) + 7) % 7
		return last.add(-back), true
	}
	first := date{y, m, 1}
	d := 1 + (int(wd)-int(first.weekday())+7)%7 + 7*(nth-1)
	if d > daysIn(y, m) {
		return date{}, false
	}
	return date{y, m, d}, true
}

// lunarMonthNames and lunarDayNames read 正月, 腊月, 初一, 廿五 ...
var lunarMonthNames = []struct {
	w string
	m int
}{
	{"正月", 1}, {"冬月", 11}, {"腊月", 12}, {"臘月", 12}, {"十一月", 11}, {"十二月", 12}, {"一月", 1}, {"二月", 2},
	{"三月", 3}, {"四月", 4}, {"五月", 5}, {"六月", 6}, {"七月", 7}, {"八月", 8}, {"九月", 9}, {"十月", 10},
}

// lunarDate reads a lunar month and day: 八月十五, 正月初一, 腊月廿三, 8月15日.
func (s *scanner) lunarDate() (m, d int, ok bool) {
	at := s.i
	m = 0
	for _, e := range lunarMonthNames {
		if _, ok := s.lit(e.w); ok {
			m = e.m
			break
		}
	}
	if m == 0 {
		n, ok := s.digits(2)
		if !ok {
			s.i = at
			return 0, 0, false
		}
		if _, ok := s.lit("月"); !ok {
			s.i = at
			return 0, 0, false
		}
		m = n
	}
	switch {
	case s.litOK("初"):
		n, ok := s.number(2)
		if !ok || n < 1 || n > 10 {
			s.i = at
			return 0, 0, false
		}
		d = n
	case s.litOK("廿"):
		d = 20
		if n, ok := s.number(1); ok && n >= 1 && n <= 9 {
			d += n
		}
	case s.litOK("卅"):
		d = 30
	default:
		n, ok := s.number(2)
		if !ok {
			s.i = at
			return 0, 0, false
		}
		d = n
	}
	s.lit("日", "号", "號")
	if m < 1 || m > 12 || d < 1 || d > 30 {
		s.i = at
		return 0, 0, false
	}
	return m, d, true
}

func (s *scanner) litOK(w string) bool { _, ok := s.lit(w); return ok }

// lunarLabel is the stored form of a lunar month and day ("8-15").
func lunarLabel(m, d int) string { return strconv.Itoa(m) + "-" + strconv.Itoa(d) }
