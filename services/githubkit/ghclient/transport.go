package ghclient

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// HTTP limits (spec §3.3, §9).
const (
	gitHubTimeout    = 20 * time.Second
	maxRedirects     = 5
	maxBodyBytes     = 5 << 20
	maxIdlePerHost   = 32
	dialTimeout      = 10 * time.Second
	tlsHandshakeTime = 10 * time.Second
)

// guardControl refuses, after DNS resolution, connections to addresses the
// guard blocks.
func guardControl(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBlockedAddress, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || blockedAddr(ip) {
		return ErrBlockedAddress
	}
	return nil
}

// endpointKey carries the route template of a GitHub call ("/repos/{owner}/
// {repo}/events") to the transport, for span names and metric labels.
type endpointKey struct{}

func withEndpoint(ctx context.Context, route string) context.Context {
	return context.WithValue(ctx, endpointKey{}, route)
}

func endpointOf(ctx context.Context) string {
	if s, ok := ctx.Value(endpointKey{}).(string); ok {
		return s
	}
	return "other"
}

// HTTPOptions configure NewHTTPClient.
type HTTPOptions struct {
	// AllowPrivateNetworks turns the SSRF guard off (--github-allow-private-networks).
	AllowPrivateNetworks bool
	// Tracer starts one client span per request; nil = no spans.
	Tracer trace.Tracer
	// Metrics records calls and rate-limit headers; nil = none.
	Metrics *Metrics
	// Timeout overrides gitHubTimeout (tests).
	Timeout time.Duration
}

// NewHTTPClient returns the process-wide GitHub HTTP client (spec §3.3 rule
// 1): one pooled transport behind the SSRF dialer, a body cap, client spans
// and metrics, and a same-host redirect policy.
//
// The 20 s bound of a call is not http.Client.Timeout: with a wrapping
// RoundTripper that field makes net/http start a goroutine per request that
// only a Close of the response body stops, and go-github never closes the
// original body of an error response (CheckResponse swaps it), so every 304
// would leave a goroutine behind for 20 s. GitHub applies the bound to each
// call's context instead; the transport's response-header timeout is a
// backstop for other users of the client.
func NewHTTPClient(o HTTPOptions) *http.Client {
	timeout := o.Timeout
	if timeout == 0 {
		timeout = gitHubTimeout
	}
	d := &net.Dialer{Timeout: min(dialTimeout, timeout), KeepAlive: 30 * time.Second}
	if !o.AllowPrivateNetworks {
		d.Control = guardControl
	}
	base := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   maxIdlePerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   min(tlsHandshakeTime, timeout),
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport:     &tracingTransport{next: base, tracer: o.Tracer, metrics: o.Metrics},
		CheckRedirect: sameHostRedirect,
	}
}

// sameHostRedirect follows at most maxRedirects hops, only to the scheme and
// host of the first request (spec §3.3 rule 3).
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects { // via holds the original and every hop followed
		return fmt.Errorf("%w: too many hops", ErrOffHostRedirect)
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("%w: other host", ErrOffHostRedirect)
	}
	return nil
}

// tracingTransport starts a CLIENT span per request, caps the body and
// records metrics. It never records the query, headers or token.
type tracingTransport struct {
	next    http.RoundTripper
	tracer  trace.Tracer
	metrics *Metrics
}

func (t *tracingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	route := endpointOf(ctx)
	var span trace.Span
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, req.Method+" "+route,
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(
				attribute.String("http.request.method", req.Method),
				attribute.String("server.address", req.URL.Hostname()),
				attribute.String("url.path", req.URL.EscapedPath()),
				attribute.String("url.template", route),
			))
		req = req.WithContext(ctx)
	}
	cond := conditionalOf(ctx)
	if cond != nil && cond.IfNoneMatch != "" {
		req = req.Clone(ctx) // a RoundTripper must not change the caller's request
		req.Header.Set("If-None-Match", cond.IfNoneMatch)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	if cond != nil && err == nil {
		cond.ETag, cond.NotModified = resp.Header.Get("ETag"), resp.StatusCode == http.StatusNotModified
	}
	if err == nil && resp.ContentLength > maxBodyBytes {
		_ = resp.Body.Close()
		resp, err = nil, ErrBodyTooLarge
	}
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
		resp.Body = &limitedBody{rc: resp.Body, left: maxBodyBytes}
	}
	if t.metrics != nil {
		t.metrics.Requests.WithLabelValues(route, code).Inc()
		t.metrics.Seconds.WithLabelValues(route).Observe(time.Since(start).Seconds())
		if err == nil {
			if rem, perr := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining")); perr == nil {
				res := resp.Header.Get("X-RateLimit-Resource")
				if res == "" {
					res = "core"
				}
				t.metrics.RateRemaining.WithLabelValues(res).Set(float64(rem))
			}
		}
	}
	if span != nil {
		if err != nil {
			span.SetStatus(codes.Error, "transport error")
		} else {
			span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
			if resp.StatusCode >= 500 {
				span.SetStatus(codes.Error, "")
			}
		}
		span.End()
	}
	return resp, err
}

// CloseIdleConnections closes the pool's idle connections (http.Client's
// CloseIdleConnections reaches the transport through this method).
func (t *tracingTransport) CloseIdleConnections() {
	if ci, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// limitedBody fails with ErrBodyTooLarge once more than left bytes are read.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrBodyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, ErrBodyTooLarge
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
