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
	"fmt"
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

func (s *hookReceiver) serveWebhook(w http.ResponseWriter, r *http.Request) {
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

// hookListener serves the receiver on Config.WebhookAddr, when set, as a
// part of the runner: it listens before intake opens and shuts down after
// intake drained.
func (s *hookReceiver) hookListener() bus.Part {
	var srv *httpserve.Server
	return bus.PartFuncs{
		StartFunc: func(context.Context) error {
			if s.cfg.WebhookAddr == "" {
				return nil
			}
			mux := http.NewServeMux()
			mux.Handle(WebhookPath, http.HandlerFunc(s.serveWebhook))
			var err error
			srv, err = httpserve.Listen(s.cfg.WebhookAddr, mux, httpserve.Limits{
				ReadTimeout: s.cfg.WebhookReadTimeout + httpserve.DefaultReadHeaderTimeout, WriteTimeout: 30 * time.Second,
				MaxBody: s.cfg.WebhookMaxBody, BodyBudget: s.cfg.WebhookBodyBudget,
			})
			if err != nil {
				return fmt.Errorf("githubkit: webhook listener: %w", err)
			}
			s.log.Info("webhook receiver listening", "addr", srv.Addr())
			return nil
		},
		StopFunc: func(ctx context.Context) error {
			if srv == nil {
				return nil
			}
			return srv.Shutdown(ctx)
		},
	}
}

// receive handles one delivery and returns the status and reason word to
// answer with. Each step either passes the delivery on or answers it.
func (s *hookReceiver) receive(ctx context.Context, w http.ResponseWriter, r *http.Request, span trace.Span) (int, string) {
	d, v := s.checkRequest(w, r)
	if v.done() {
		return v.answer()
	}
	if v := s.locateHook(ctx, d); v.done() {
		return v.answer()
	}
	span.SetAttributes(bus.AttrScope.String(d.sc.String()))
	ctx = ghclient.WithInstallation(ctx, d.sc.String())
	if v := s.loadHook(ctx, d); v.done() {
		return v.answer()
	}
	release, v := s.admitBody(w, r, d)
	if v.done() {
		return v.answer()
	}
	defer release()
	if v := s.authenticate(ctx, d); v.done() {
		return v.answer()
	}
	if v := s.answerUnrecorded(ctx, d); v.done() {
		return v.answer()
	}
	msg, v := s.hookRecord(d)
	if v.done() {
		return v.answer()
	}
	if v := s.refuseReplay(ctx, d); v.done() {
		return v.answer()
	}
	return s.record(ctx, d, msg).answer()
}

// hookVerdict is how receive answers a delivery: the HTTP status and the
// reason word (the deliveries metric's outcome label). The zero verdict
// passes the delivery on to the next step.
type hookVerdict struct {
	status int
	reason string
}

// done reports whether the delivery is answered.
func (v hookVerdict) done() bool { return v.status != 0 }

func (v hookVerdict) answer() (int, string) { return v.status, v.reason }

// hookDelivery is what receive has learned of one delivery so far.
type hookDelivery struct {
	id       string // the hook id of the path
	hh       hookHeaders
	sc       binding.Scope
	hook     *HookRecord
	body     []byte
	bodyHash string
}

// checkRequest refuses, from the request line and headers alone, what is
// not a delivery to a hook.
func (s *hookReceiver) checkRequest(w http.ResponseWriter, r *http.Request) (*hookDelivery, hookVerdict) {
	id, ok := parseHookPath(r.URL.Path)
	if !ok {
		return nil, hookVerdict{http.StatusNotFound, "unknown_hook"}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return nil, hookVerdict{http.StatusMethodNotAllowed, "method"}
	}
	if r.ContentLength > s.cfg.WebhookMaxBody {
		return nil, hookVerdict{http.StatusRequestEntityTooLarge, "too_large"}
	}
	hh, err := parseHookHeaders(r.Header)
	if err != nil {
		return nil, hookVerdict{http.StatusBadRequest, "bad_headers"}
	}
	return &hookDelivery{id: id, hh: hh}, hookVerdict{}
}

// locateHook finds the scope that holds the hook.
func (s *hookReceiver) locateHook(ctx context.Context, d *hookDelivery) hookVerdict {
	sc, _, _, err := s.runner.KV().Locate(ctx, KindHook, d.id)
	switch {
	case errors.Is(err, bus.ErrNoScope):
		return hookVerdict{http.StatusNotFound, "unknown_hook"}
	case err != nil:
		s.log.ErrorContext(ctx, "webhook: lookup failed", "err", err)
		return hookVerdict{http.StatusServiceUnavailable, "unavailable"}
	}
	d.sc = sc
	return hookVerdict{}
}

// loadHook reads the hook's record.
func (s *hookReceiver) loadHook(ctx context.Context, d *hookDelivery) hookVerdict {
	hook, _, err := hookStore(s.runner.KV()).Get(ctx, d.sc, d.id)
	if err != nil || hook == nil {
		if err != nil {
			s.log.ErrorContext(ctx, "webhook: read failed", "scope", d.sc.String(), "err", err)
			return hookVerdict{http.StatusServiceUnavailable, "unavailable"}
		}
		return hookVerdict{http.StatusNotFound, "unknown_hook"}
	}
	d.hook = hook
	return hookVerdict{}
}

// admitBody reads the body into d. The body is admitted to the receiver's
// budget before a byte of it is read, and must arrive within the read
// timeout, whatever server mounts the receiver: slow clients cannot hold
// memory. Once the body is read, the caller calls release when the delivery
// is answered; a body that could not be read is released here.
func (s *hookReceiver) admitBody(w http.ResponseWriter, r *http.Request, d *hookDelivery) (release func(), v hookVerdict) {
	release, err := s.bodies.Admit(r, s.cfg.WebhookMaxBody)
	switch {
	case errors.Is(err, httpserve.ErrTooLarge):
		return nil, hookVerdict{http.StatusRequestEntityTooLarge, "too_large"}
	case err != nil:
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		return nil, hookVerdict{http.StatusServiceUnavailable, "busy"}
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.WebhookReadTimeout))
	body, err := readBody(w, r, s.cfg.WebhookMaxBody)
	if err != nil {
		release()
		return nil, bodyVerdict(w, err)
	}
	d.body = body
	return release, hookVerdict{}
}

// bodyVerdict answers a body that could not be read.
func bodyVerdict(w http.ResponseWriter, err error) hookVerdict {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return hookVerdict{http.StatusRequestEntityTooLarge, "too_large"}
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		return hookVerdict{http.StatusRequestTimeout, "slow_body"}
	}
	return hookVerdict{http.StatusBadRequest, "bad_body"}
}

// authenticate checks the body's signature against the hook's secret, and
// that the scope's installation is there and active.
func (s *hookReceiver) authenticate(ctx context.Context, d *hookDelivery) hookVerdict {
	secret, err := s.keyring.Open(d.sc, d.hook.Secret)
	if err != nil {
		s.log.ErrorContext(ctx, "webhook: sealed secret cannot be opened", "scope", d.sc.String())
		return hookVerdict{http.StatusInternalServerError, "internal"}
	}
	if !verifySignature(secret, d.body, d.hh.Signature) {
		return hookVerdict{http.StatusUnauthorized, "bad_signature"}
	}
	a, err := s.authorityOf(ctx, d.sc)
	if err != nil {
		return hookVerdict{http.StatusServiceUnavailable, "unavailable"}
	}
	if a == nil || a.State == bus.StateRemoved {
		return hookVerdict{http.StatusNotFound, "unknown_hook"}
	}
	if !a.Active() {
		return hookVerdict{http.StatusServiceUnavailable, "inactive"}
	}
	return hookVerdict{}
}

// answerUnrecorded answers a ping and an event there is nothing to push
// for: either way the webhook delivers, and the hook notes it.
func (s *hookReceiver) answerUnrecorded(ctx context.Context, d *hookDelivery) hookVerdict {
	if d.hh.Event == "ping" {
		if _, err := s.touchHook(ctx, d.sc, d.id, true); err != nil {
			return hookVerdict{http.StatusServiceUnavailable, "unavailable"}
		}
		return hookVerdict{http.StatusOK, "pong"}
	}
	_, isEvent := webhookEvent(d.hh.Event, d.body)
	if _, isRun := webhookRun(d.hh.Event, d.body); !isEvent && !isRun {
		// nothing to push, but the webhook delivers
		if _, err := s.touchHook(ctx, d.sc, d.id, false); err != nil {
			return hookVerdict{http.StatusServiceUnavailable, "unavailable"}
		}
		return hookVerdict{http.StatusAccepted, "ignored"}
	}
	return hookVerdict{}
}

// hookRecord builds the message that records the delivery for the hook
// consumer, and sets d.bodyHash.
func (s *hookReceiver) hookRecord(d *hookDelivery) (*nats.Msg, hookVerdict) {
	sum := sha256.Sum256(d.body)
	d.bodyHash = hex.EncodeToString(sum[:16])
	nonce, err := randomToken(12)
	if err != nil {
		return nil, hookVerdict{http.StatusInternalServerError, "internal"}
	}
	data, err := json.Marshal(hookMessage{V: 1, Event: d.hh.Event, Delivery: d.hh.Delivery, Nonce: nonce, BodyHash: d.bodyHash,
		At: s.now().UTC(), Body: d.body})
	if err != nil {
		return nil, hookVerdict{http.StatusBadRequest, "bad_body"}
	}
	if int64(len(data))+hookHeadroom > s.nc.MaxPayload() {
		return nil, hookVerdict{http.StatusRequestEntityTooLarge, "too_large"}
	}
	subject, err := s.subj.Internal(Plugin, KindHook, d.sc, d.id)
	if err != nil {
		return nil, hookVerdict{http.StatusInternalServerError, "internal"}
	}
	return &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}, hookVerdict{}
}

// refuseReplay refuses a body recorded before under another delivery id.
//
// GitHub signs the body only, so a captured body sent again under a new
// delivery id must not be pushed again. A body the recent set holds (a
// delivery's entry lives deliveryKeep) was recorded before: refused under
// another delivery id, answered as a duplicate under its own (an admin's
// redelivery days later), either way before anything is written.
func (s *hookReceiver) refuseReplay(ctx context.Context, d *hookDelivery) hookVerdict {
	switch by, err := s.bodyRecorded(ctx, d.sc, d.hook.RepoKey, d.bodyHash); {
	case err != nil:
		s.log.ErrorContext(ctx, "webhook: recent set unreadable", "scope", d.sc.String(), "err", err)
		return hookVerdict{http.StatusServiceUnavailable, "unavailable"}
	case by == d.hh.Delivery:
		return hookVerdict{http.StatusOK, "duplicate"}
	case by != "":
		return hookVerdict{http.StatusConflict, "replay"}
	}
	// The body marker covers the minutes before the consumer claimed the
	// delivery in the recent set. The same delivery id passes (GitHub's
	// redelivery, or our own answer lost) and is recorded again, which
	// the stream drops as a duplicate.
	dd := s.runner.Dedupe()
	if _, err := dd.Create(ctx, d.sc, KindHookBody, []byte(d.hh.Delivery), d.bodyHash); err != nil {
		if !bus.IsCASConflict(err) {
			return hookVerdict{http.StatusServiceUnavailable, "unavailable"}
		}
		e, gerr := dd.Get(ctx, d.sc, KindHookBody, d.bodyHash)
		if gerr != nil {
			return hookVerdict{http.StatusServiceUnavailable, "unavailable"}
		}
		if string(e.Value()) != d.hh.Delivery {
			return hookVerdict{http.StatusConflict, "replay"}
		}
	}
	return hookVerdict{}
}

// record publishes the delivery to the hook stream, with the delivery as
// Nats-Msg-Id so that a second recording of it is dropped as a duplicate.
func (s *hookReceiver) record(ctx context.Context, d *hookDelivery, msg *nats.Msg) hookVerdict {
	msg.Header.Set(jetstream.MsgIDHeader, d.sc.String()+":"+d.id+":"+d.hh.Delivery)
	bus.Inject(ctx, msg.Header)
	ack, err := s.runner.JetStream().PublishMsg(ctx, msg, jetstream.WithExpectStream(HookStreamName))
	if err != nil {
		s.log.ErrorContext(ctx, "webhook: record failed", "scope", d.sc.String(), "err", err)
		return hookVerdict{http.StatusServiceUnavailable, "unavailable"}
	}
	if ack.Duplicate {
		return hookVerdict{http.StatusOK, "duplicate"}
	}
	return hookVerdict{http.StatusAccepted, "recorded"}
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
func (s *hookReceiver) authorityOf(ctx context.Context, sc binding.Scope) (*bus.Authority, error) {
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
