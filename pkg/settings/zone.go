package settings

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
	_ "time/tzdata" // installations name IANA zones; the binary may run where none are installed
)

// NotAZone is the reason of a time zone setting that names no zone.
const NotAZone Reason = "not a time zone, default used"

// ErrNotAZone reports a name LoadZone refuses.
var ErrNotAZone = errors.New("settings: not a time zone")

// LoadZone loads a time zone by its IANA name ("Asia/Shanghai", "UTC",
// "Etc/GMT-8") from Go's zone database, which the binary embeds. It is the
// one rule every service applies to a zone name, in a setting or stored in
// a record, so that a name means the same rules on every host: it refuses
// the empty name, "Local" and "localtime" in any case (the host's zone,
// which differs between hosts), and anything time.LoadLocation cannot
// load, which includes fixed offsets such as "+08:00" and "UTC+8" and
// paths such as "../etc/passwd". The name is taken as written: callers
// trim it.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || strings.EqualFold(name, "Local") || strings.EqualFold(name, "localtime") {
		return nil, ErrNotAZone
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, ErrNotAZone
	}
	return loc, nil
}

// Zone reads a time zone setting: a JSON string naming a zone LoadZone
// loads, trimmed. Missing, null or "" gives def silently (a service's
// default: UTC, or the process zone where its spec says so); a value that
// is not a string gives def (WrongType); a name that is not a zone gives
// def (NotAZone). Either way the warning's Used is def's name. A zone is
// never guessed: the result is the named zone or def.
func (r *Reader) Zone(field string, def *time.Location) *time.Location {
	v, ok := r.Raw(field)
	if !ok {
		return def
	}
	var name string
	if v[0] != '"' || json.Unmarshal(v, &name) != nil {
		r.warnings = append(r.warnings, Warning{Field: field, Reason: WrongType, Raw: v, Used: def.String()})
		return def
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return def
	}
	loc, err := LoadZone(name)
	if err != nil {
		r.warnings = append(r.warnings, Warning{Field: field, Reason: NotAZone, Raw: v, Used: def.String()})
		return def
	}
	return loc
}
