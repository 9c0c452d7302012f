package githubkit

import "errors"

var (
	// ErrImport is returned by Import for a document or plan that cannot be
	// applied; nothing was written.
	ErrImport = errors.New("githubkit: import refused")
)
