// Package pdf renders business documents. It consumes render requests from
// DOCS with the durable consumer "pdf", renders each document (maroto, see
// render/), stores it in the object store "documents", and only then
// releases the deliveries waiting for it to NOTIFY, each with the stored
// document's name and SHA-256 — so no email that carries a document leaves
// before the document exists.
//
// A failed render is retried with a growing delay; when the consumer's
// deliveries are exhausted the request is dead-lettered with its reason, and
// a failed status event goes out for each waiting notification: none waits
// forever in silence. A waiting delivery of an ordered route is then
// settled in its order's sequence, and the next revision parked behind it
// released: a revision whose document is never rendered does not hold the
// order's later ones.
//
// Several requests may name one document: the parts of a large fan-out, or
// a later event that adds recipients to a revision. Whichever finds the
// document stored reuses it — a revision's document is the one first
// stored — and each releases its own deliveries. Two parts rendered at once
// by two workers render the same bytes (a request's document depends on its
// order and date only), so both store the same document.
package pdf

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/services/pdf/render"
	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/ordering"
	"github.com/heraldhq/herald/shared/telemetry"
	"github.com/heraldhq/herald/streams"
)

// Stream and Durable name the consumer the renderer reads.
const (
	Stream  = "DOCS"
	Durable = "pdf"
)

// Renderer turns a render request into PDF bytes.
type Renderer interface {
	Render(ctx context.Context, req documents.Request) ([]byte, error)
}

// Store keeps rendered documents; *documents.Store is the real one.
type Store interface {
	// Lookup returns the reference of a stored document, if there is one.
	Lookup(ctx context.Context, name, docType string) (notification.Document, bool, error)
	// Put stores a document and returns its reference.
	Put(ctx context.Context, name, docType string, pdf []byte) (notification.Document, error)
}

// Config configures the renderer service.
type Config struct {
	// Renderer renders documents. Defaults to the maroto renderer.
	Renderer Renderer
	// Store keeps the rendered documents. Defaults to the object store
	// "documents", opened on Start.
	Store Store
	// Concurrency is how many documents are rendered at once. Rendering is
	// CPU-bound. Defaults to 2.
	Concurrency int
	// RetryDelay is the wait after a first failed render; it doubles with
	// each try, up to five minutes. Defaults to 2s.
	RetryDelay time.Duration

	// Logger defaults to discarding.
	Logger *slog.Logger
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider
	// Tenants bounds the tenant label of metrics; one is shared by every
	// service of a process (metrics.max_tenants). Defaults to
	// telemetry.DefaultMaxTenants tenants.
	Tenants *telemetry.Labels
	// TracerProvider, when set, traces every message handled; nil traces
	// nothing.
	TracerProvider trace.TracerProvider
	// Fair serves tenants in turn (scheduling.fair): a consumer per tenant
	// with render requests waiting, so one tenant's thousand renders do
	// not hold up another's single order. Off, the durable "pdf" takes
	// requests first come, first served.
	Fair bool
	// Sequences settle the ordered deliveries of a request given up,
	// releasing the revisions parked behind them. Nil when no Redis is
	// configured: routes are then not ordered.
	Sequences Sequences
}

// Sequences release the revisions of ordered routes (ordering.Redis).
type Sequences interface {
	Settle(ctx context.Context, sequence, member string) (*ordering.Released, error)
}

// WithDefaults returns the config with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.Renderer == nil {
		c.Renderer = Maroto{}
	}
	c.Concurrency = cmp.Or(c.Concurrency, 2)
	c.RetryDelay = cmp.Or(c.RetryDelay, 2*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	if c.Tenants == nil {
		c.Tenants = telemetry.NewTenantLabels(telemetry.DefaultMaxTenants)
	}
	return c
}

// Validate checks a config WithDefaults filled in.
func (c Config) Validate() error {
	if c.Concurrency < 1 {
		return fmt.Errorf("pdf.concurrency: must be 1 or more (got %d)", c.Concurrency)
	}
	return nil
}

// Service is the renderer.
type Service struct {
	cfg   Config
	js    jetstream.JetStream
	store Store
	loops consumer.Group
	fair  *consumer.Fair
	// maxDeliver is the consumer's MaxDeliver: the last try.
	maxDeliver int
	rendered   metric.Int64Counter
	duration   metric.Float64Histogram
}

// New returns a renderer service.
func New(js jetstream.JetStream, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, js: js, store: cfg.Store}
	m := cfg.MeterProvider.Meter("github.com/heraldhq/herald/services/pdf")
	var errs [2]error
	s.rendered, errs[0] = m.Int64Counter("herald.documents",
		metric.WithDescription("Render requests by document type and outcome: rendered, reused (already stored), retry, failed."))
	s.duration, errs[1] = m.Float64Histogram("herald.document.render.duration", metric.WithUnit("s"),
		metric.WithDescription("Time to render one document."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
	return s, errors.Join(errs[:]...)
}

// Start consumes render requests.
func (s *Service) Start(ctx context.Context) error {
	if s.store == nil {
		store, err := documents.Open(ctx, s.js)
		if err != nil {
			return fmt.Errorf("pdf: %w", err)
		}
		s.store = store
	}
	s.loops.Config = consumer.Config{JetStream: s.js, Concurrency: s.cfg.Concurrency, Logger: s.cfg.Logger,
		TracerProvider: s.cfg.TracerProvider, MeterProvider: s.cfg.MeterProvider}
	if s.cfg.Fair {
		return s.startFair(ctx)
	}
	c, err := consumer.Lookup(ctx, s.js, Stream, Durable)
	if err != nil {
		return fmt.Errorf("pdf: %w", err)
	}
	s.maxDeliver = c.CachedInfo().Config.MaxDeliver
	if err := s.loops.Start(ctx, c, s.handle); err != nil {
		return fmt.Errorf("pdf: %w", err)
	}
	return nil
}

// startFair serves tenants' render requests in turn (consumer.Fair),
// keyed by the tenant token of docs.render.<doc_type>.<tenant>; requests
// stored before that token (docs.render.<doc_type>) are served too, keyed
// by type. The durable "pdf" reads the whole stream and would overlap
// them on the work queue: it is removed, its unacknowledged requests going
// to the per-tenant consumers.
func (s *Service) startFair(ctx context.Context) error {
	declared, err := streams.Find(Stream)
	if err != nil {
		return fmt.Errorf("pdf: %w", err)
	}
	c, err := declared.Consumer(Durable)
	if err != nil {
		return fmt.Errorf("pdf: %w", err)
	}
	stream, err := s.js.Stream(ctx, Stream)
	if err != nil {
		return fmt.Errorf("pdf: %w", err)
	}
	if err := consumer.RemoveShared(ctx, stream, Durable, s.cfg.Logger); err != nil {
		return fmt.Errorf("pdf: %w", err)
	}
	s.maxDeliver = c.Config.MaxDeliver
	s.fair, err = consumer.StartFair(ctx, s.handle, consumer.FairConfig{Config: s.loops.Config, Stream: Stream, Classes: []consumer.Class{
		{Name: Durable, Prefix: "docs.render.*", Template: c.Config},
		{Name: Durable + "-untokened", Prefix: "docs.render", Template: c.Config},
	}})
	if err != nil {
		return fmt.Errorf("pdf: %w", err)
	}
	return nil
}

// Stop drains: renders under way finish and are settled.
func (s *Service) Stop(ctx context.Context) error {
	if s.fair != nil {
		return errors.Join(s.fair.Stop(ctx), s.loops.Stop(ctx))
	}
	return s.loops.Stop(ctx)
}

func (s *Service) handle(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	var req documents.Request
	if err := json.Unmarshal(msg.Data(), &req); err != nil || req.Object == "" || req.Type == "" {
		return s.giveUp(ctx, msg, req, fmt.Errorf("malformed render request: %v", cmp.Or(err, errors.New("missing object or type"))))
	}
	if tokens := strings.Split(msg.Subject(), "."); len(tokens) == 4 && tokens[3] != req.Tenant {
		return s.giveUp(ctx, msg, req, fmt.Errorf("forged render request: tenant %q published on %s", req.Tenant, msg.Subject()))
	}
	if !documents.BelongsTo(req.Object, req.Tenant) {
		// Rendering over, or releasing, another tenant's document.
		return s.giveUp(ctx, msg, req, fmt.Errorf("forged render request: object %s is not tenant %q's", req.Object, req.Tenant))
	}
	ref, err := s.document(ctx, req)
	if err == nil {
		err = s.release(ctx, req, ref)
	}
	var invalid *render.InputError
	switch {
	case err == nil:
		return consumer.Done()
	case errors.As(err, &invalid) || errors.Is(err, documents.ErrTooLarge):
		// The order itself cannot be rendered (a character no font has, a
		// malformed amount), or a delivery can never be published: no retry
		// can change that.
		return s.giveUp(ctx, msg, req, err)
	case s.lastTry(msg):
		return s.giveUp(ctx, msg, req, fmt.Errorf("render failed after %d tries: %w", s.maxDeliver, err))
	}
	s.count(ctx, req, "retry")
	s.cfg.Logger.WarnContext(ctx, "document not ready; will retry", "object", req.Object, "tenant", req.Tenant, "error", err)
	return consumer.Retry(err, s.cfg.RetryDelay, 5*time.Minute)
}

// lastTry reports whether msg is on its last allowed delivery: a render
// given up then still tells the notifications that waited on it.
func (s *Service) lastTry(msg jetstream.Msg) bool {
	md, err := msg.Metadata()
	return err == nil && s.maxDeliver > 0 && md.NumDelivered >= uint64(s.maxDeliver)
}

// document returns the stored document, rendering and storing it first if
// this revision has not been stored yet.
func (s *Service) document(ctx context.Context, req documents.Request) (ref notification.Document, err error) {
	ctx, span := telemetry.Start(ctx, "render "+req.Type,
		attribute.String("herald.document.object", req.Object), attribute.String("herald.tenant", req.Tenant))
	defer func() {
		span.SetAttributes(attribute.Int64("herald.document.size", ref.Size))
		telemetry.End(span, err)
	}()
	if ref, ok, err := s.store.Lookup(ctx, req.Object, req.Type); err != nil || ok {
		if ok {
			span.SetAttributes(attribute.Bool("herald.document.reused", true))
			s.count(ctx, req, "reused")
		}
		return ref, err
	}
	start := time.Now()
	pdf, err := s.cfg.Renderer.Render(ctx, req)
	if err != nil {
		return notification.Document{}, fmt.Errorf("rendering %s: %w", req.Object, err)
	}
	s.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attribute.String("type", req.Type)))
	ref, err = s.store.Put(ctx, req.Object, req.Type, pdf)
	if err == nil {
		s.count(ctx, req, "rendered")
	}
	return ref, err
}

// release publishes the waiting deliveries, each now carrying the stored
// document, and waits until NOTIFY has them all. It publishes none unless
// all fit the connection's max payload.
func (s *Service) release(ctx context.Context, req documents.Request, ref notification.Document) error {
	for i := range req.Deliveries {
		req.Deliveries[i].Document = &ref
	}
	msgs, err := documents.FitDeliveries(req.Deliveries, s.js.Conn().MaxPayload())
	if err != nil {
		return err
	}
	_, err = notification.PublishMsgs(ctx, s.js, msgs)
	return err
}

// giveUp gives up on a request: the order's revisions waiting behind its
// deliveries are released, every notification that waited on it is told
// it failed (a status event), then the request is dead-lettered. If the DLQ
// cannot be written the request comes back, and the status events are
// published again within STATUS's duplicate window, dropped there. A
// release that fails retries the request instead — its next try gives up
// and releases again — unless this is its last try: it is dead-lettered
// then, saying so, and replaying it releases them.
func (s *Service) giveUp(ctx context.Context, msg jetstream.Msg, req documents.Request, cause error) consumer.Outcome {
	if err := s.settle(ctx, req); err != nil {
		if !s.lastTry(msg) {
			s.count(ctx, req, "retry")
			s.cfg.Logger.WarnContext(ctx, "document given up, but the order's next revisions not released; will retry",
				"object", req.Object, "tenant", req.Tenant, "error", err)
			return consumer.Retry(fmt.Errorf("%w (giving up: %w)", err, cause), s.cfg.RetryDelay, time.Minute)
		}
		cause = fmt.Errorf("%w; %w", cause, err)
	}
	s.count(ctx, req, "failed")
	s.cfg.Logger.ErrorContext(ctx, "giving up on a document; dead-lettering", "object", req.Object, "tenant", req.Tenant, "error", cause)
	for _, d := range req.Deliveries {
		s.publishFailed(ctx, d, cause)
	}
	return consumer.GiveUp(cause)
}

// settle settles each waiting delivery of an ordered route in its
// sequence, as failed — it will never be sent — and publishes again the
// revision parked behind it, if one is.
func (s *Service) settle(ctx context.Context, req documents.Request) error {
	if s.cfg.Sequences == nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	for _, d := range req.Deliveries {
		if d.Sequence != nil && !strings.HasPrefix(d.Sequence.Key, req.Tenant+":") {
			continue // a forged request settles no other tenant's revisions
		}
		next, err := ordering.Release(ctx, s.cfg.Sequences, s.js, d, "failed: its document was not rendered")
		if err != nil {
			return fmt.Errorf("releasing the order's next revision after %s: %w", d.ID, err)
		}
		if next != "" {
			s.cfg.Logger.InfoContext(ctx, "released the order's next revision", "notification_id", d.ID, "next_notification_id", next)
		}
	}
	return nil
}

func (s *Service) publishFailed(ctx context.Context, d notification.Delivery, cause error) {
	err := notification.PublishStatus(ctx, s.js, notification.Status{
		NotificationID: d.ID, DedupeKey: d.DedupeKey, Tenant: d.Tenant, Channel: d.Channel, State: "failed",
		Reason: "its document could not be rendered: " + cause.Error(), Retryable: true, EventID: d.Event.ID, Time: time.Now().UTC(),
	})
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "status event not published", "notification_id", d.ID, "error", err)
	}
}

func (s *Service) count(ctx context.Context, req documents.Request, outcome string) {
	s.rendered.Add(ctx, 1, metric.WithAttributes(attribute.String("type", req.Type),
		attribute.String("tenant", s.cfg.Tenants.Value(req.Tenant)), attribute.String("outcome", outcome)))
}
