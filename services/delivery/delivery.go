// Package delivery sends notifications. Its email workers consume NOTIFY
// through the durable consumers email-critical, email-normal and email-low,
// render each delivery in its recipient's language, and hand it to the
// configured provider chain. A delivery worker never applies business rules:
// who hears about what was decided by the router.
//
// Each message goes through the same steps, so that every copy of a
// notification — redelivered, republished past the duplicate window, handed
// to two workers at once — is sent at most once in effect:
//
//  1. lease the dedupe key in Redis (SET NX with a TTL beyond AckWait); if
//     another worker holds it, ask for redelivery later and look again then
//     — the holder may crash — and if Redis cannot answer, do not send;
//  2. claim the key in the ledger (a revision-checked write): a key
//     already delivered is acknowledged unsent, one another worker claimed
//     lately is left to it;
//  3. one try: a pass over the provider chain;
//  4. write the outcome to the ledger (attempts included);
//  5. publish a status event on notify.status.<tenant>;
//  6. acknowledge and wait for the server's confirmation; release the lease.
//
// A transient failure of the whole pass is retried with a growing delay (at
// least the providers' Retry-After); a permanent refusal is dead-lettered
// with its reason, then terminated; so is the last allowed try
// (Config.MaxTries), recorded as failed-but-retryable for the resend sweep.
// A notification of a suspended tenant (Config.Registry) is dead-lettered
// with the reason before step 1, and nothing of it is recorded.
// The consumer's MaxDeliver is only a safety net for crash loops.
package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Stream is the stream deliveries are consumed from.
const Stream = "NOTIFY"

// Durables are the email consumers, one per priority.
func Durables() []string {
	out := make([]string, len(notification.Priorities))
	for i, p := range notification.Priorities {
		out[i] = fmt.Sprintf("%s-%s", event.ChannelEmail, p)
	}
	return out
}

// Service is the email delivery worker.
type Service struct {
	cfg      Config
	js       jetstream.JetStream
	composer *email.Composer
	loops    consumer.Group
	metrics  metrics
}

// New validates cfg (after filling its defaults) and returns a worker.
func New(js jetstream.JetStream, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	composer, err := email.NewComposer(cfg.From)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, js: js, composer: composer}
	s.metrics, err = newMetrics(cfg.MeterProvider, cfg.Tenants, cfg.Providers)
	return s, err
}

// Start consumes every email consumer.
func (s *Service) Start(ctx context.Context) error {
	if s.cfg.Ledger == nil {
		l, err := ledger.Open(ctx, s.js)
		if err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		s.cfg.Ledger = l
	}
	if s.cfg.Documents == nil {
		store, err := documents.Open(ctx, s.js)
		if err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		s.cfg.Documents = store
	}
	for _, durable := range Durables() {
		c, err := consumer.Lookup(ctx, s.js, Stream, durable)
		if err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		w := worker{Service: s, lockTTL: s.cfg.lockTTL(c.CachedInfo().Config.AckWait)}
		if err := s.loops.Start(ctx, c, w.handle, consumer.Config{Concurrency: s.cfg.Concurrency, Logger: s.cfg.Logger,
			TracerProvider: s.cfg.TracerProvider, MeterProvider: s.cfg.MeterProvider}); err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
	}
	return nil
}

// Stop drains: sends under way finish and are acknowledged.
func (s *Service) Stop(ctx context.Context) error { return s.loops.Stop(ctx) }

// worker handles the messages of one consumer.
type worker struct {
	*Service
	lockTTL time.Duration
}

func (w worker) handle(ctx context.Context, msg jetstream.Msg) {
	d, err := notification.Decode(msg.Data())
	if err == nil {
		err = ownTenant(msg.Subject(), d)
	}
	if err != nil {
		w.metrics.outcome(ctx, d, "", "failed")
		w.deadLetter(ctx, msg, d, err)
		return
	}
	if err := w.admit(d.Tenant); err != nil {
		w.metrics.outcome(ctx, d, "", "refused")
		w.deadLetter(ctx, msg, d, err)
		return
	}
	log := w.cfg.Logger.With("notification_id", d.ID, "tenant", d.Tenant)
	// Delivered is final: a redelivered copy of a delivered notification
	// is acked without queueing for the lease again — that is what broke
	// the lockstep of copies that keep colliding. A first delivery skips
	// this read; the check after taking the lease covers it.
	md, err := msg.Metadata()
	first := err == nil && md.NumDelivered == 1
	if !first && w.alreadyDelivered(ctx, msg, d, log) {
		return
	}
	lease, err := w.cfg.Locker.Acquire(ctx, d.DedupeKey, w.lockTTL)
	switch {
	case errors.Is(err, lock.ErrHeld):
		// Another worker is on it. Not acked: if it crashes, this copy
		// must still go out; on redelivery the ledger tells. The delay
		// grows, because every redelivery counts toward MaxDeliver and
		// the holder may rightly work until its lease ends.
		w.metrics.lockBusy.Add(ctx, 1, w.metrics.attrs(d))
		consumer.NakWithBackoff(msg, w.cfg.RetryDelay, w.lockTTL)
		return
	case err != nil:
		w.metrics.unguarded.Add(ctx, 1, w.metrics.attrs(d))
		delay := consumer.NakWithBackoff(msg, w.cfg.RetryDelay, time.Minute)
		log.WarnContext(ctx, "redis unavailable: not sending without the lock; will retry", "retry_in", delay, "error", err)
		return
	}
	defer func() {
		if err := lease.Release(context.WithoutCancel(ctx)); errors.Is(err, lock.ErrNotHeld) {
			log.WarnContext(ctx, "the lease expired while working; raise email.lock_ttl", "lock_ttl", w.lockTTL)
		}
	}()

	// A first delivery claims a key nobody recorded in one write (a
	// create, which fails if the key exists); anything else — and any
	// create that fails — reads the ledger first.
	entry := ledger.Entry{DedupeKey: d.DedupeKey, Tenant: d.Tenant}
	if !first || w.put(ctx, d, &entry, ledger.Sending) != nil {
		if entry, err = w.cfg.Ledger.Get(ctx, d.Tenant, d.DedupeKey); err != nil {
			delay := consumer.NakWithBackoff(msg, w.cfg.RetryDelay, time.Minute)
			log.WarnContext(ctx, "ledger unavailable; will retry", "retry_in", delay, "error", err)
			return
		}
		if entry.State == ledger.Delivered {
			w.duplicate(ctx, msg, d, entry, log)
			return
		}
		if !w.claim(ctx, msg, d, &entry, log) {
			return
		}
	}
	w.try(ctx, msg, d, &entry, lease, log)
}

// put writes e in state, detached from ctx and bounded: a claim that lands
// after its worker gave up on it would hold every copy off for a lease TTL.
// Every claim, first or not, says what the notification is (describe).
func (w worker) put(ctx context.Context, d notification.Delivery, e *ledger.Entry, state ledger.State) error {
	e.NotificationID, e.Channel, e.State = d.ID, string(d.Channel), state
	describe(e, d)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return w.cfg.Ledger.Put(cctx, e)
}

// describe copies into e what the listing shows of d, so it can list a
// notification whose notification.Accepted record it never received: the
// order, document and recipient that record names, taken from it so the
// two never disagree.
func describe(e *ledger.Entry, d notification.Delivery) {
	n := notification.AcceptedOf("", []notification.Delivery{d}, time.Time{}).Notifications[0]
	e.Order, e.Document, e.Recipient = n.Order, n.Document, n.Recipient
}

// claim records in the ledger that this worker is sending now. The write is
// revision-checked, so of two workers that both hold a lease — possible
// only if Redis lost it — one claim fails. A recent claim by another worker
// means it may be sending this very moment: come back later.
func (w worker) claim(ctx context.Context, msg jetstream.Msg, d notification.Delivery, e *ledger.Entry, log *slog.Logger) bool {
	if e.State == ledger.Sending && time.Since(e.UpdatedAt) < w.lockTTL {
		w.metrics.lockBusy.Add(ctx, 1, w.metrics.attrs(d))
		delay := consumer.NakWithBackoff(msg, w.cfg.RetryDelay, w.lockTTL)
		log.WarnContext(ctx, "another worker claimed this notification without holding its lease (was Redis restarted?); waiting",
			"claimed_at", e.UpdatedAt, "retry_in", delay)
		return false
	}
	if err := w.put(ctx, d, e, ledger.Sending); err != nil {
		w.metrics.lockBusy.Add(ctx, 1, w.metrics.attrs(d))
		delay := consumer.NakWithBackoff(msg, w.cfg.RetryDelay, w.lockTTL)
		log.WarnContext(ctx, "could not claim the notification; will retry", "retry_in", delay, "error", err)
		return false
	}
	return true
}

// alreadyDelivered acks msg if the ledger already records its notification
// as delivered. Any doubt (the ledger unreadable) means no: the full
// protocol then decides.
func (w worker) alreadyDelivered(ctx context.Context, msg jetstream.Msg, d notification.Delivery, log *slog.Logger) bool {
	entry, err := w.cfg.Ledger.Get(ctx, d.Tenant, d.DedupeKey)
	if err != nil || entry.State != ledger.Delivered {
		return false
	}
	w.duplicate(ctx, msg, d, entry, log)
	return true
}

func (w worker) duplicate(ctx context.Context, msg jetstream.Msg, d notification.Delivery, e ledger.Entry, log *slog.Logger) {
	w.metrics.outcome(ctx, d, e.Provider, "duplicate")
	log.InfoContext(ctx, "already delivered; acknowledging this copy unsent", "provider", e.Provider)
	w.ack(ctx, msg, log)
}

// try makes one pass over the chain and settles the message by its outcome.
func (w worker) try(ctx context.Context, msg jetstream.Msg, d notification.Delivery, entry *ledger.Entry, lease *lock.Lease, log *slog.Logger) {
	ctx, span := telemetry.Start(ctx, "deliver "+string(d.Channel),
		attribute.String("herald.notification_id", d.ID), attribute.String("herald.tenant", d.Tenant),
		attribute.String("herald.template", d.Template), attribute.Int("herald.try", entry.Tries+1))
	defer span.End()
	var result pass
	route, err := w.route(ctx, d)
	var content email.Content
	if err == nil {
		content, err = w.content(ctx, d)
	}
	var m email.Message
	if err == nil {
		m, err = w.composer.Compose(d, content)
		m.From = cmp.Or(route.From, m.From)
	}
	if err == nil {
		// A send under way is finished, not abandoned, when the worker
		// stops: abandoning it is how a provider ends up with a message the
		// ledger never hears of. Each provider call is bounded anyway.
		result = chain{providers: route.Providers, timeout: w.cfg.ProviderTimeout}.send(context.WithoutCancel(ctx), m)
		err = result.Failures
	}
	md, _ := msg.Metadata()
	attempt := ledger.Attempt{Time: time.Now().UTC(), Provider: result.Receipt.Provider, Ambiguous: provider.IsAmbiguous(err)}
	if md != nil {
		attempt.Delivery = md.NumDelivered
	}
	if err != nil {
		attempt.Error = err.Error()
	}
	entry.Record(attempt)
	if err != nil && !result.Accepted {
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attribute.String("herald.provider", result.Receipt.Provider), attribute.Bool("herald.accepted", result.Accepted))
	if attempt.Ambiguous {
		w.metrics.ambiguous.Add(ctx, 1, w.metrics.attrs(d))
		log.WarnContext(ctx, "ambiguous send: a provider may have accepted before failing, so the recipient may get this twice",
			"dedupe_key", d.DedupeKey, "accepted_by", result.Receipt.Provider, "error", err)
	}
	switch {
	case result.Accepted:
		w.delivered(ctx, msg, d, entry, result.Receipt, lease, log)
	case provider.IsPermanent(err):
		w.failed(ctx, msg, d, entry, err, false, lease, log)
	case entry.Tries >= w.cfg.MaxTries:
		w.failed(ctx, msg, d, entry, fmt.Errorf("gave up after %d tries: %w", entry.Tries, err), true, lease, log)
	default:
		w.retry(ctx, msg, d, entry, err, lease, log)
	}
}

// route is the tenant's provider chain and From: Config.Routes, or the
// platform's chain for every tenant — narrowed to the providers the
// delivery pins, if it pins any.
func (w worker) route(ctx context.Context, d notification.Delivery) (Route, error) {
	route := Route{Providers: w.cfg.Providers}
	if w.cfg.Routes != nil {
		var err error
		if route, err = w.cfg.Routes.Route(ctx, d.Tenant); err != nil {
			return Route{}, err
		}
	}
	if len(d.Providers) == 0 {
		return route, nil
	}
	return route.Pinned(d.Providers)
}

// ownTenant refuses a delivery that reaches outside its tenant: published
// on another tenant's subject (notify.<channel>.<priority>.<tenant>), or
// naming another tenant's document — a forged message that would mail one
// tenant's PDF to an address another chose. It is refused before the
// lease and the ledger: nothing of it is recorded under either tenant.
func ownTenant(subject string, d notification.Delivery) error {
	if tokens := strings.Split(subject, "."); len(tokens) != 4 || tokens[3] != d.Tenant {
		return fmt.Errorf("forged delivery: tenant %q published on %s", d.Tenant, subject)
	}
	if d.Document != nil && d.Document.Object != "" && !documents.BelongsTo(d.Document.Object, d.Tenant) {
		return fmt.Errorf("forged delivery: document %s is not tenant %q's", d.Document.Object, d.Tenant)
	}
	for _, a := range d.Attachments {
		if !documents.BelongsTo(a.Object, d.Tenant) {
			return fmt.Errorf("forged delivery: attachment %s is not tenant %q's", a.Object, d.Tenant)
		}
	}
	return nil
}

// admit asks the registry, if there is one, whether the tenant is served:
// a suspended tenant's notifications are not sent.
func (w worker) admit(tenant string) error {
	if w.cfg.Registry == nil {
		return nil
	}
	return w.cfg.Registry.Admit(tenant, false)
}

// content is the delivery's document: attached, or linked when it is
// larger than AttachMaxBytes and links can be signed. A document that is
// gone, or not the one the delivery was released with, is a permanent
// failure; anything else reading it is worth retrying.
func (w worker) content(ctx context.Context, d notification.Delivery) (email.Content, error) {
	if len(d.Attachments) > 0 {
		return w.attachments(ctx, d)
	}
	if d.Document == nil || d.Document.Object == "" {
		return email.Content{}, nil
	}
	if d.Document.Size > w.cfg.AttachMaxBytes && w.cfg.Links != nil {
		link, expires := w.cfg.Links.Link(d.Document.Object, time.Now())
		return email.Content{Link: link, LinkExpires: expires}, nil
	}
	pdf, err := w.read(ctx, *d.Document)
	if err != nil {
		return email.Content{}, err
	}
	return email.Content{Attachments: []email.Attachment{{
		Filename: attachmentName(d), ContentType: "application/pdf", Data: pdf,
	}}}, nil
}

// attachments are the documents a delivery's caller named, each attached
// under its object's base name. There is no text to put a link in, so one
// larger than AttachMaxBytes is a permanent failure naming it.
func (w worker) attachments(ctx context.Context, d notification.Delivery) (email.Content, error) {
	var c email.Content
	for _, ref := range d.Attachments {
		if ref.Size > w.cfg.AttachMaxBytes {
			return email.Content{}, provider.Permanentf("attachment %s is %d bytes, more than documents.attach_max_bytes (%d)",
				ref.Object, ref.Size, w.cfg.AttachMaxBytes)
		}
		pdf, err := w.read(ctx, ref)
		if err != nil {
			return email.Content{}, err
		}
		c.Attachments = append(c.Attachments, email.Attachment{
			Filename: fileName(path.Base(ref.Object)), ContentType: "application/pdf", Data: pdf,
		})
	}
	return c, nil
}

// read reads a stored document. One that is gone, or not the one the
// delivery was released with, is a permanent failure; anything else
// reading it is worth retrying.
func (w worker) read(ctx context.Context, ref notification.Document) ([]byte, error) {
	pdf, err := w.cfg.Documents.Get(ctx, ref)
	if errors.Is(err, documents.ErrNotFound) || errors.Is(err, documents.ErrDigestMismatch) {
		return nil, provider.Permanent(err)
	}
	return pdf, err
}

// attachmentName is an ASCII file name a mail client shows as is, e.g.
// PO-2026-0042_purchase_order_r2.pdf.
func attachmentName(d notification.Delivery) string {
	order, revision := "document", 0
	if d.Order != nil {
		order, revision = d.Order.ID, d.Order.Revision
	}
	return fileName(fmt.Sprintf("%s_%s_r%d.pdf", order, d.Document.Type, revision))
}

// fileName keeps a file name to ASCII letters, digits and . - _, which
// every mail client shows as is.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '.' || r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, name)
}

func (w worker) delivered(ctx context.Context, msg jetstream.Msg, d notification.Delivery, e *ledger.Entry, r provider.Receipt, lease *lock.Lease, log *slog.Logger) {
	e.State, e.Provider, e.ProviderMessageID, e.Reason, e.Retryable = ledger.Delivered, r.Provider, r.MessageID, "", false
	e.Delivery = nil
	w.metrics.outcome(ctx, d, r.Provider, "delivered")
	if !d.CreatedAt.IsZero() {
		w.metrics.latency.Record(ctx, time.Since(d.CreatedAt).Seconds(), w.metrics.attrs(d))
	}
	if !d.Event.StoredAt.IsZero() {
		w.metrics.endToEnd.Record(ctx, time.Since(d.Event.StoredAt).Seconds(), w.metrics.attrs(d))
	}
	w.record(ctx, d, e, lease, log)
	// The provider has the message: a shutdown that cancels ctx must not
	// cut the status and the ack short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	w.publishStatus(ctx, d, e, log)
	log.InfoContext(ctx, "delivered", "provider", r.Provider, "provider_message_id", r.MessageID, "tries", e.Tries)
	w.ack(ctx, msg, log)
}

// failed records a notification given up — permanently refused, or out of
// tries (retryable: the sweep may resend it) — then dead-letters and
// terminates it.
func (w worker) failed(ctx context.Context, msg jetstream.Msg, d notification.Delivery, e *ledger.Entry, cause error, retryable bool, lease *lock.Lease, log *slog.Logger) {
	e.State, e.Reason, e.Retryable = ledger.Failed, cause.Error(), retryable
	if retryable {
		e.Delivery = msg.Data()
	}
	w.record(ctx, d, e, lease, log)
	w.publishStatus(ctx, d, e, log)
	outcome := "failed"
	if retryable {
		outcome = "exhausted"
	}
	w.metrics.outcome(ctx, d, "", outcome)
	w.deadLetter(ctx, msg, d, cause)
}

func (w worker) retry(ctx context.Context, msg jetstream.Msg, d notification.Delivery, e *ledger.Entry, cause error, lease *lock.Lease, log *slog.Logger) {
	e.State, e.Reason, e.Retryable = ledger.Retrying, cause.Error(), true
	w.record(ctx, d, e, lease, log)
	w.metrics.outcome(ctx, d, "", "retry")
	// The back-off's jitter may halve a delay: starting from twice the
	// providers' Retry-After keeps the wait at least as long as they asked.
	after := provider.RetryAfter(cause)
	delay := consumer.NakWithBackoff(msg, max(w.cfg.RetryDelay, 2*after), max(5*time.Minute, 2*after))
	log.WarnContext(ctx, "every provider failed; will retry", "tries", e.Tries, "retry_in", delay, "error", cause)
}

// recordTimeout bounds how long a worker insists on writing a claim (a
// NATS leader election takes seconds); settleTimeout, each of the status
// and the ack that follow an outcome.
const (
	recordTimeout = 15 * time.Second
	settleTimeout = 15 * time.Second
)

// record writes the entry, retrying with a growing pause for as long as it
// takes: an outcome left unwritten is a claim left standing, and once that
// claim is older than a lease TTL a redelivered copy sends again. So the
// lease is extended while the ledger cannot be written — every copy waits —
// and only a shutdown that ran out of time (ctx cancelled) gives up; the ack
// follows either way.
//
// A conflict is either this worker's own write, which landed although its
// answer was lost, or another worker's, written while we held the lease —
// only possible if the lease expired — which is reported loudly.
func (w worker) record(ctx context.Context, d notification.Delivery, e *ledger.Entry, lease *lock.Lease, log *slog.Logger) {
	extended := time.Now()
	for try := 0; ; try++ {
		// Each try is detached from ctx: even a worker stopping for good
		// makes one.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		err := w.cfg.Ledger.Put(tctx, e)
		cancel()
		if err == nil {
			return
		}
		if errors.Is(err, ledger.ErrConflict) {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
			other, gerr := w.cfg.Ledger.Get(tctx, d.Tenant, d.DedupeKey)
			cancel()
			switch {
			case gerr != nil:
				err = gerr // read it again on the next try
			case sameOutcome(other, *e):
				return
			default:
				if other.State == ledger.Delivered && e.State == ledger.Delivered {
					w.metrics.outcome(ctx, d, e.Provider, "duplicate_sent")
				}
				log.ErrorContext(ctx, "another worker recorded this notification while we held its lease",
					"ours", e.State, "theirs", other.State, "their_provider", other.Provider)
				return
			}
		}
		if try == 0 || try%10 == 0 {
			log.WarnContext(ctx, "ledger unavailable; holding the lease until the outcome is recorded", "state", e.State, "error", err)
		}
		if time.Since(extended) > w.lockTTL/3 {
			if xerr := lease.Extend(ctx, w.lockTTL); xerr != nil {
				log.WarnContext(ctx, "could not extend the lease while waiting for the ledger", "error", xerr)
			}
			extended = time.Now()
		}
		select {
		case <-ctx.Done():
			log.ErrorContext(ctx, "could not record the outcome in the ledger", "state", e.State, "error", err)
			return
		case <-time.After(min(100*time.Millisecond<<min(try, 5), 2*time.Second, w.lockTTL/4)):
		}
	}
}

// sameOutcome reports whether the ledger's entry is the one this worker
// wrote: same state, same receipt, after the same last attempt.
func sameOutcome(ledgered, ours ledger.Entry) bool {
	n := len(ours.Attempts)
	return ledgered.State == ours.State && ledgered.ProviderMessageID == ours.ProviderMessageID &&
		len(ledgered.Attempts) == n && n > 0 && ledgered.Attempts[n-1].Time.Equal(ours.Attempts[n-1].Time)
}

func (w worker) publishStatus(ctx context.Context, d notification.Delivery, e *ledger.Entry, log *slog.Logger) {
	err := notification.PublishStatus(ctx, w.js, notification.Status{
		NotificationID: d.ID, DedupeKey: d.DedupeKey, Tenant: d.Tenant, Channel: d.Channel, State: string(e.State),
		Provider: e.Provider, ProviderMessageID: e.ProviderMessageID, Reason: e.Reason, Retryable: e.Retryable,
		Tries: e.Tries, EventID: d.Event.ID, Time: e.UpdatedAt,
	})
	if err != nil {
		log.WarnContext(ctx, "status event not published", "state", e.State, "error", err)
	}
}

func (w worker) ack(ctx context.Context, msg jetstream.Msg, log *slog.Logger) {
	if err := msg.DoubleAck(ctx); err != nil {
		log.WarnContext(ctx, "ack not confirmed; a redelivered copy will find the ledger", "error", err)
	}
}

// deadLetter copies a message that cannot succeed to the DLQ, then
// terminates it.
func (w worker) deadLetter(ctx context.Context, msg jetstream.Msg, d notification.Delivery, cause error) {
	w.cfg.Logger.ErrorContext(ctx, "delivery failed permanently; dead-lettering", "notification_id", d.ID, "tenant", d.Tenant, "error", cause)
	if err := deadletter.Terminate(ctx, w.js, msg, cause.Error()); err != nil {
		w.cfg.Logger.ErrorContext(ctx, "dead-lettering failed; the delivery will be redelivered", "notification_id", d.ID, "error", err)
		_ = msg.NakWithDelay(5 * time.Second)
	}
}

var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

type metrics struct {
	outcomes  metric.Int64Counter
	ambiguous metric.Int64Counter
	lockBusy  metric.Int64Counter
	unguarded metric.Int64Counter
	latency   metric.Float64Histogram
	endToEnd  metric.Float64Histogram
	tenants   *telemetry.Labels
	// platform names the platform's providers: a tenant's own accounts,
	// named by tenants, are labelled "tenant", so that tenants cannot grow
	// the provider label without bound.
	platform map[string]bool
}

// tenantAccount is the provider label of every tenant's own account.
const tenantAccount = "tenant"

func newMetrics(mp metric.MeterProvider, tenants *telemetry.Labels, platform []Provider) (metrics, error) {
	m := mp.Meter("github.com/heraldhq/herald/services/delivery")
	x := metrics{tenants: tenants, platform: map[string]bool{"": true}}
	for _, p := range platform {
		x.platform[p.Name] = true
	}
	var errs [6]error
	x.outcomes, errs[0] = m.Int64Counter("herald.deliveries",
		metric.WithDescription("Delivery outcomes by channel, provider (a platform provider, or tenant for a tenant's own account) and outcome: delivered, retry, failed, exhausted, duplicate (already delivered, acknowledged unsent), duplicate_sent (sent twice: a lease expired), refused (the tenant is suspended)."))
	x.ambiguous, errs[1] = m.Int64Counter("herald.delivery.ambiguous",
		metric.WithDescription("Tries where a provider may have accepted before failing (timeouts): the residual at-least-once window."))
	x.lockBusy, errs[2] = m.Int64Counter("herald.delivery.lock_contention",
		metric.WithDescription("Copies of a notification that found another worker holding its lease, and came back later."))
	x.unguarded, errs[3] = m.Int64Counter("herald.delivery.lock_unavailable",
		metric.WithDescription("Messages put back because Redis could not be asked for the lease; none is sent unguarded."))
	x.latency, errs[4] = m.Float64Histogram("herald.delivery.latency", metric.WithUnit("s"),
		metric.WithDescription("Time from the router planning a delivery to a provider accepting it."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	x.endToEnd, errs[5] = m.Float64Histogram("herald.notification.latency", metric.WithUnit("s"),
		metric.WithDescription("End to end: from the event being stored in its stream (ORDERS, INVENTORY) to a provider accepting its notification, routing and rendering included; a redriven or resent notification counts from its original event."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	return x, errors.Join(errs[:]...)
}

func (m metrics) attrs(d notification.Delivery) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("channel", string(event.ChannelEmail)), attribute.String("tenant", m.tenants.Value(d.Tenant)))
}

func (m metrics) outcome(ctx context.Context, d notification.Delivery, provider, outcome string) {
	if !m.platform[provider] {
		provider = tenantAccount
	}
	m.outcomes.Add(ctx, 1, metric.WithAttributes(
		attribute.String("channel", string(event.ChannelEmail)), attribute.String("provider", provider),
		attribute.String("outcome", outcome), attribute.String("tenant", m.tenants.Value(d.Tenant))))
}
