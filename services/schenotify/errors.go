package schenotify

import "errors"

// Errors of the store. Validation results carry a *when.Failure with a
// result code instead; these never reach the wire.
var (
	// errStore marks a storage failure (reported as unavailable).
	errStore = errors.New("schenotify: storage unavailable")
	// errGone: the record was deleted while it was being sent.
	errGone = errors.New("schenotify: reminder deleted meanwhile")
)
