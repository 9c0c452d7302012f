package githubkit

// The webhook receiver: POST <base>/github/webhook/<hook-id>. Every refusal
// (unknown hook, oversize body, bad or missing signature, replayed body)
// happens before anything is written. An accepted event is recorded
// durably (a JetStream publish with the delivery as Nats-Msg-Id) before
// the 2xx; the hook consumer (webhook_consume.go) pushes it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Webhook headers GitHub sends.
const (
	headerHookEvent     = "X-GitHub-Event"
	headerHookDelivery  = "X-GitHub-Delivery"
	headerHookSignature = "X-Hub-Signature-256"
)

// hookRequestTimeout bounds the work of one delivery (GitHub gives up
// after 10 s).
const hookRequestTimeout = 8 * time.Second

var (
	// hookIDRE is the form of a hook id in a URL (randomToken of
	// hookIDBytes: 22 base64url characters), with room for other lengths.
	hookIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)
	// hookEventRE is the form of an X-GitHub-Event name.
	hookEventRE = regexp.MustCompile(`^[a-z][a-z_]{0,63}$`)
	// hookDeliveryRE is the form of an X-GitHub-Delivery id (a GUID).
	hookDeliveryRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
)

// errHookHeaders is a delivery whose headers are missing or malformed.
var errHookHeaders = errors.New("githubkit: malformed webhook headers")

// parseHookPath returns the hook id of a receiver path
// (WebhookPath + id, nothing after it).
func parseHookPath(path string) (string, bool) {
	id, ok := strings.CutPrefix(path, WebhookPath)
	if !ok || !hookIDRE.MatchString(id) {
		return "", false
	}
	return id, true
}

// hookHeaders are the webhook headers of one delivery.
type hookHeaders struct {
	Event     string // X-GitHub-Event
	Delivery  string // X-GitHub-Delivery
	Signature string // X-Hub-Signature-256, checked later
}

// parseHookHeaders checks the headers of a delivery; a missing signature is
// reported by the signature check, not here.
func parseHookHeaders(h http.Header) (hookHeaders, error) {
	out := hookHeaders{Event: h.Get(headerHookEvent), Delivery: h.Get(headerHookDelivery), Signature: h.Get(headerHookSignature)}
	if !hookEventRE.MatchString(out.Event) || !hookDeliveryRE.MatchString(out.Delivery) {
		return hookHeaders{}, errHookHeaders
	}
	if ct := h.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return hookHeaders{}, errHookHeaders
		}
	}
	return out, nil
}

// hookMessage is what the receiver records for the consumer.
type hookMessage struct {
	V        int    `json:"v"`
	Event    string `json:"event"`
	Delivery string `json:"delivery"`
	// Nonce tells this recording apart from a later one of the same
	// delivery (after the stream's duplicate window).
	Nonce    string          `json:"nonce"`
	BodyHash string          `json:"body_hash"`
	At       time.Time       `json:"at"`
	Body     json.RawMessage `json:"body"`
}

func (s *webhooks) serveWebhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), hookRequestTimeout)
	defer cancel()
	ctx, span := s.tracer.Start(ctx, "githubkit.webhook", trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	status, reason := s.receive(ctx, w, r, span)
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, reason)
	}
	s.hm.deliveries.WithLabelValues(reason).Inc()
	s.hm.seconds.Observe(time.Since(start).Seconds())
	hookReply(w, status, reason)
}

// receive handles one delivery and returns the status and reason word to
// answer with.
func (s *webhooks) receive(ctx context.Context, w http.ResponseWriter, r *http.Request, span trace.Span) (int, string) {
	id, ok := parseHookPath(r.URL.Path)
	if !ok {
		return http.StatusNotFound, "unknown_hook"
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return http.StatusMethodNotAllowed, "method"
	}
	if r.ContentLength > s.cfg.WebhookMaxBody {
		return http.StatusRequestEntityTooLarge, "too_large"
	}
	hh, err := parseHookHeaders(r.Header)
	if err != nil {
		return http.StatusBadRequest, "bad_headers"
	}
	kv := s.runner.KV()
	sc, _, _, err := kv.Locate(ctx, KindHook, id)
	switch {
	case errors.Is(err, bus.ErrNoScope):
		return http.StatusNotFound, "unknown_hook"
	case err != nil:
		s.log.ErrorContext(ctx, "webhook: lookup failed", "err", err)
		return http.StatusServiceUnavailable, "unavailable"
	}
	span.SetAttributes(bus.AttrScope.String(sc.String()))
	ctx = ghclient.WithInstallation(ctx, sc.String())
	hook, _, err := hookStore(kv).Get(ctx, sc, id)
	if err != nil || hook == nil {
		if err != nil {
			s.log.ErrorContext(ctx, "webhook: read failed", "scope", sc.String(), "err", err)
			return http.StatusServiceUnavailable, "unavailable"
		}
		return http.StatusNotFound, "unknown_hook"
	}
	// the body is admitted to the receiver's budget before a byte of it
	// is read, and must arrive within the read timeout, whatever server
	// mounts the receiver: slow clients cannot hold memory
	release, err := s.bodies.Admit(r, s.cfg.WebhookMaxBody)
	switch {
	case errors.Is(err, httpserve.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large"
	case err != nil:
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		return http.StatusServiceUnavailable, "busy"
	}
	defer release()
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.WebhookReadTimeout))
	body, err := readBody(w, r, s.cfg.WebhookMaxBody)
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			return http.StatusRequestEntityTooLarge, "too_large"
		case errors.As(err, &ne) && ne.Timeout():
			w.Header().Set("Connection", "close")
			return http.StatusRequestTimeout, "slow_body"
		}
		return http.StatusBadRequest, "bad_body"
	}
	secret, err := s.keyring.Open(sc, hook.Secret)
	if err != nil {
		s.log.ErrorContext(ctx, "webhook: sealed secret cannot be opened", "scope", sc.String())
		return http.StatusInternalServerError, "internal"
	}
	if !verifySignature(secret, body, hh.Signature) {
		return http.StatusUnauthorized, "bad_signature"
	}
	a, err := s.authorityOf(ctx, sc)
	if err != nil {
		return http.StatusServiceUnavailable, "unavailable"
	}
	if a == nil || a.State == bus.StateRemoved {
		return http.StatusNotFound, "unknown_hook"
	}
	if !a.Active() {
		return http.StatusServiceUnavailable, "inactive"
	}
	if hh.Event == "ping" {
		if _, err := s.touchHook(ctx, sc, id, true); err != nil {
			return http.StatusServiceUnavailable, "unavailable"
		}
		return http.StatusOK, "pong"
	}
	_, isEvent := webhookEvent(hh.Event, body)
	if _, isRun := webhookRun(hh.Event, body); !isEvent && !isRun {
		// nothing to push, but the webhook delivers
		if _, err := s.touchHook(ctx, sc, id, false); err != nil {
			return http.StatusServiceUnavailable, "unavailable"
		}
		return http.StatusAccepted, "ignored"
	}
	sum := sha256.Sum256(body)
	bodyHash := hex.EncodeToString(sum[:16])
	nonce, err := randomToken(12)
	if err != nil {
		return http.StatusInternalServerError, "internal"
	}
	data, err := json.Marshal(hookMessage{V: 1, Event: hh.Event, Delivery: hh.Delivery, Nonce: nonce, BodyHash: bodyHash,
		At: s.now().UTC(), Body: body})
	if err != nil {
		return http.StatusBadRequest, "bad_body"
	}
	if int64(len(data))+hookHeadroom > s.nc.MaxPayload() {
		return http.StatusRequestEntityTooLarge, "too_large"
	}
	subject, err := s.subj.Internal(Plugin, KindHook, sc, id)
	if err != nil {
		return http.StatusInternalServerError, "internal"
	}
	// GitHub signs the body only, so a captured body sent again under a
	// new delivery id must not be pushed again. A body the recent set
	// holds (a delivery's entry lives deliveryKeep) was recorded before:
	// refused under another delivery id, answered as a duplicate under
	// its own (an admin's redelivery days later), either way before
	// anything is written.
	switch by, err := s.bodyRecorded(ctx, sc, hook.RepoKey, bodyHash); {
	case err != nil:
		s.log.ErrorContext(ctx, "webhook: recent set unreadable", "scope", sc.String(), "err", err)
		return http.StatusServiceUnavailable, "unavailable"
	case by == hh.Delivery:
		return http.StatusOK, "duplicate"
	case by != "":
		return http.StatusConflict, "replay"
	}
	// The body marker covers the minutes before the consumer claimed the
	// delivery in the recent set. The same delivery id passes (GitHub's
	// redelivery, or our own answer lost) and is recorded again, which
	// the stream drops as a duplicate.
	dd := s.runner.Dedupe()
	if _, err := dd.Create(ctx, sc, KindHookBody, []byte(hh.Delivery), bodyHash); err != nil {
		if !bus.IsCASConflict(err) {
			return http.StatusServiceUnavailable, "unavailable"
		}
		e, gerr := dd.Get(ctx, sc, KindHookBody, bodyHash)
		if gerr != nil {
			return http.StatusServiceUnavailable, "unavailable"
		}
		if string(e.Value()) != hh.Delivery {
			return http.StatusConflict, "replay"
		}
	}
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, sc.String()+":"+id+":"+hh.Delivery)
	bus.Inject(ctx, msg.Header)
	ack, err := s.runner.JetStream().PublishMsg(ctx, msg, jetstream.WithExpectStream(HookStreamName))
	if err != nil {
		s.log.ErrorContext(ctx, "webhook: record failed", "scope", sc.String(), "err", err)
		return http.StatusServiceUnavailable, "unavailable"
	}
	if ack.Duplicate {
		return http.StatusOK, "duplicate"
	}
	return http.StatusAccepted, "recorded"
}

// hookHeadroom is what the recorded message's headers may take beside its
// data within the connection's maximum payload.
const hookHeadroom = 4096

// readBody reads at most limit bytes of the request body; beyond it the
// error is an *http.MaxBytesError.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, limit)
	defer rd.Close()
	return io.ReadAll(rd)
}

// authorityOf returns a scope's authority from the in-process view, or
// from storage when the view has not seen it.
func (s *webhooks) authorityOf(ctx context.Context, sc binding.Scope) (*bus.Authority, error) {
	if a, ok := s.runner.View().Lookup(sc); ok {
		return &a, nil
	}
	return s.runner.Authority(ctx, sc)
}

// hookMetrics are the webhook's Prometheus metrics.
type hookMetrics struct {
	deliveries *prometheus.CounterVec // by outcome: the receiver's reason word
	seconds    prometheus.Histogram   // receipt to answer
	pushed     *prometheus.CounterVec // the consumer's outcomes
}

func newHookMetrics(reg prometheus.Registerer, bodies *httpserve.Budget) (*hookMetrics, error) {
	m := &hookMetrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_webhook_deliveries_total", Help: "Webhook deliveries by outcome (recorded, duplicate, pong, ignored, unknown_hook, bad_signature, too_large, busy, slow_body, replay, ...).",
		}, []string{"outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "githubkit_webhook_receive_seconds", Help: "Webhook delivery handling time, receipt to answer.",
			Buckets: prometheus.DefBuckets,
		}),
		pushed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "githubkit_webhook_events_total", Help: "Recorded webhook events by consumer outcome (pushed, filtered, seen, dropped, stale, retry).",
		}, []string{"outcome"}),
	}
	if reg != nil {
		inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "githubkit_webhook_body_bytes_in_flight", Help: "Delivery body bytes admitted and being read (bounded by the webhook body budget).",
		}, func() float64 { return float64(bodies.InFlight()) })
		for _, c := range []prometheus.Collector{m.deliveries, m.seconds, m.pushed, inFlight} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
