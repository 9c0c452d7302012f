package ghclient

import "errors"

var (
	// ErrAPIURL means an installation's github_api_url is not an allowed
	// GitHub API root (spec §2); commands answer err.config.
	ErrAPIURL = errors.New("githubkit: invalid github_api_url")

	// ErrBlockedAddress is returned by the GitHub dialer when a host resolves
	// to an address the SSRF guard refuses (spec §2 rule 2).
	ErrBlockedAddress = errors.New("githubkit: address refused by the network guard")

	// ErrOffHostRedirect means GitHub redirected to another scheme or host,
	// or more than five times; the redirect is not followed (spec §3.3).
	ErrOffHostRedirect = errors.New("githubkit: redirect refused")

	// ErrBodyTooLarge means a GitHub response body exceeded 5 MiB.
	ErrBodyTooLarge = errors.New("githubkit: response body too large")
)
