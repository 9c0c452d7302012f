package when

import "errors"

// Errors of the parsers. Validation results carry a *Failure with a result
// code instead; these never leave the package's callers. The texts keep the
// service's prefix: they are the service's errors, this package is its part.
var (
	// errDuration: ParseDuration got input outside the grammar.
	errDuration = errors.New("schenotify: invalid duration")
	// errTimeForm: a time that is neither form L nor form R.
	errTimeForm = errors.New("schenotify: invalid time")
	// errRecurrence: a recurrence outside the grammar (invalid_recurrence).
	errRecurrence = errors.New("schenotify: invalid recurrence")
	// errIntervalShort: an @every under the minimum (interval_too_short).
	errIntervalShort = errors.New("schenotify: recurrence interval too short")
)

// hintError is an expression the reader understood well enough to know it
// must not guess: the failure code names the hint the reply gives
// (interval_with_clock, interval_ambiguous, calendar_range,
// lunar_needs_date, advance_too_long).
type hintError struct{ code string }

func (e *hintError) Error() string { return "schenotify: time expression refused (" + e.code + ")" }

// Hints of the reader.
var (
	errIntervalClock  = &hintError{"interval_with_clock"}
	errIntervalAmbig  = &hintError{"interval_ambiguous"}
	errLunarNeedsDate = &hintError{"lunar_needs_date"}
	errAdvanceTooLong = &hintError{"advance_too_long"}
)
