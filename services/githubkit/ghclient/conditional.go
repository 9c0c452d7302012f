package ghclient

import "context"

// Conditional requests through the typed go-github calls: go-github's
// methods take no request headers, so a caller that holds an ETag puts a
// *Conditional on the context; the transport sends it as If-None-Match
// and notes the answer's ETag and a 304, and GitHub.do reports a 304 as
// success with no value (the caller keeps what it had). GitHub does not
// count a 304 against the rate limit of an authenticated caller.
type Conditional struct {
	IfNoneMatch string // sent when non-empty
	ETag        string // the ETag of the (last hop's) answer
	NotModified bool   // the answer was 304
}

type conditionalKey struct{}

// WithConditional puts c on ctx for the calls made with it.
func WithConditional(ctx context.Context, c *Conditional) context.Context {
	return context.WithValue(ctx, conditionalKey{}, c)
}

func conditionalOf(ctx context.Context) *Conditional {
	c, _ := ctx.Value(conditionalKey{}).(*Conditional)
	return c
}
