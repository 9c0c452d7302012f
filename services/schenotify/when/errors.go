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
