package events

import "errors"

var (
	// ErrEmptyRepo means a repository argument was empty (usage text).
	ErrEmptyRepo = errors.New("githubkit: empty repository")

	// ErrBadRepo means a repository argument is not owner/repo or a
	// GitHub URL (spec §3.2).
	ErrBadRepo = errors.New("githubkit: invalid repository")
)
