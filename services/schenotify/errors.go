package schenotify

import "errors"

// Errors of the parsers and the store. Validation results carry a
// *Failure with a result code instead; these never reach the wire.
var (
	// errDuration: ParseDuration got input outside the grammar.
	errDuration = errors.New("schenotify: invalid duration")
	// errTimeForm: a time that is neither form L nor form R.
	errTimeForm = errors.New("schenotify: invalid time")
	// errRecurrence: a recurrence outside the grammar (invalid_recurrence).
	errRecurrence = errors.New("schenotify: invalid recurrence")
	// errIntervalShort: an @every under the minimum (interval_too_short).
	errIntervalShort = errors.New("schenotify: recurrence interval too short")
	// errStore marks a storage failure (reported as unavailable).
	errStore = errors.New("schenotify: storage unavailable")
	// errGone: the record was deleted while it was being sent.
	errGone = errors.New("schenotify: reminder deleted meanwhile")
)
