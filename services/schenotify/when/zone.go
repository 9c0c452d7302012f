package when

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/settings"
)

// Adjust reasons reported when the DST policy moves or picks a wall time.
const (
	AdjustNone    = ""
	AdjustGap     = "dst_gap"
	AdjustOverlap = "dst_overlap"
)

// DefaultZoneName resolves the process zone once (spec 2 rule 2): TZ if it
// names a loadable zone (TZ="" means UTC), otherwise the target of the
// /etc/localtime symlink below zoneinfo/, otherwise UTC. lookupEnv and
// readlink are os.LookupEnv and os.Readlink in production.
func DefaultZoneName(lookupEnv func(string) (string, bool), readlink func(string) (string, error)) string {
	if tz, ok := lookupEnv("TZ"); ok {
		if tz == "" {
			return "UTC"
		}
		tz = strings.TrimPrefix(tz, ":")
		if _, err := settings.LoadZone(tz); err == nil {
			return tz
		}
	}
	if target, err := readlink("/etc/localtime"); err == nil {
		target = filepath.ToSlash(target)
		if i := strings.LastIndex(target, "zoneinfo/"); i >= 0 {
			name := target[i+len("zoneinfo/"):]
			if _, err := settings.LoadZone(name); err == nil {
				return name
			}
		}
	}
	return "UTC"
}

// ProcessZoneName is DefaultZoneName for the running process.
func ProcessZoneName() string { return DefaultZoneName(os.LookupEnv, os.Readlink) }

// Wall is a wall-clock reading without a zone.
type Wall struct {
	Year, Month, Day, Hour, Minute, Second int
}

// naive returns the wall time as if it were UTC.
func (w Wall) naive() time.Time {
	return time.Date(w.Year, time.Month(w.Month), w.Day, w.Hour, w.Minute, w.Second, 0, time.UTC)
}

func wallOf(t time.Time) Wall {
	return Wall{t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second()}
}

// String formats the wall time as YYYY-MM-DD HH:MM:SS.
func (w Wall) String() string { return w.naive().Format(time.DateTime) }

func offsetAt(t time.Time, loc *time.Location) int {
	_, off := t.In(loc).Zone()
	return off
}

// Resolve maps a wall time in loc to an instant with the policy of spec 7.3:
// a wall time that exists once is used as is; one that is missing (a gap)
// or occurs twice (an overlap) is read with the UTC offset in effect just
// before the transition, so a gap time moves later by the gap's length and
// an overlap time takes the earlier instant. The reason reports which rule
// applied. Unlike time.Date, a gap time never moves earlier.
func Resolve(w Wall, loc *time.Location) (time.Time, string) {
	n := w.naive()
	// Candidate offsets: those in effect around the wall time. Probing two
	// days either side covers zones that skip a whole day.
	var cands []int
	for _, h := range []int{-48, -24, -12, 0, 12, 24, 48} {
		off := offsetAt(n.Add(time.Duration(h)*time.Hour), loc)
		if !containsInt(cands, off) {
			cands = append(cands, off)
		}
	}
	var valid []time.Time
	for _, off := range cands {
		t := n.Add(-time.Duration(off) * time.Second)
		if offsetAt(t, loc) == off {
			valid = append(valid, t)
		}
	}
	switch {
	case len(valid) == 1:
		return valid[0].UTC(), AdjustNone
	case len(valid) > 1:
		earliest := valid[0]
		for _, t := range valid[1:] {
			if t.Before(earliest) {
				earliest = t
			}
		}
		return earliest.UTC(), AdjustOverlap
	}
	// A gap: the earliest candidate instant lies before the transition, and
	// its offset is the one in effect just before it.
	maxOff := cands[0]
	for _, off := range cands[1:] {
		maxOff = max(maxOff, off)
	}
	before := offsetAt(n.Add(-time.Duration(maxOff)*time.Second), loc)
	return n.Add(-time.Duration(before) * time.Second).UTC(), AdjustGap
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ZoneLabel is the IANA name plus the offset the zone has at t, e.g.
// "Asia/Shanghai (UTC+08:00)".
func ZoneLabel(loc *time.Location, t time.Time) string {
	return loc.String() + " (UTC" + t.In(loc).Format("-07:00") + ")"
}

// Offset formats the offset of loc at t as ±HH:MM.
func Offset(loc *time.Location, t time.Time) string { return t.In(loc).Format("-07:00") }

// RFC3339In formats t to the second with the offset loc has at t.
func RFC3339In(t time.Time, loc *time.Location) string {
	return t.In(loc).Format(time.RFC3339)
}

// UTCString formats t as RFC 3339 UTC to the second (2006-01-02T15:04:05Z).
func UTCString(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Local formats t as the legacy YYYY-MM-DD HH:MM:SS in loc.
func Local(t time.Time, loc *time.Location) string { return t.In(loc).Format(time.DateTime) }
