// Package delivery sends notifications. Its email workers consume NOTIFY
// through the durable consumers email-critical, email-normal and email-low,
// render each delivery in its recipient's language, and hand it to the
// configured provider chain. A delivery worker never applies business rules:
// who hears about what was decided by the router.
//
// Outcomes: accepted → acknowledged (and the ack confirmed by the server);
// transient failure of the whole chain → redelivered later with a growing
// delay; permanent failure or an unreadable message → dead-lettered with the
// reason, then terminated.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
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
	chain    chain
	loops    consumer.Group
	outcomes metric.Int64Counter
	latency  metric.Float64Histogram
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
	s := &Service{cfg: cfg, js: js, composer: composer, chain: chain(cfg.Providers)}
	m := cfg.MeterProvider.Meter("github.com/heraldhq/herald/services/delivery")
	var errs [2]error
	s.outcomes, errs[0] = m.Int64Counter("herald.deliveries",
		metric.WithDescription("Delivery attempts by channel, provider and outcome (delivered, retry, failed)."))
	s.latency, errs[1] = m.Float64Histogram("herald.delivery.latency", metric.WithUnit("s"),
		metric.WithDescription("Time from the router planning a delivery to a provider accepting it."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
	return s, errors.Join(errs[:]...)
}

// Composer is the worker's template renderer, for checking routes against
// the templates that exist.
func (s *Service) Composer() *email.Composer { return s.composer }

// Start consumes every email consumer.
func (s *Service) Start(ctx context.Context) error {
	for _, durable := range Durables() {
		cfg := consumer.Config{Concurrency: s.cfg.Concurrency, Logger: s.cfg.Logger}
		if err := s.loops.Start(ctx, s.js, Stream, durable, s.handle, cfg); err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
	}
	return nil
}

// Stop drains: sends under way finish and are acknowledged.
func (s *Service) Stop(ctx context.Context) error { return s.loops.Stop(ctx) }

func (s *Service) handle(ctx context.Context, msg jetstream.Msg) {
	d, err := notification.Decode(msg.Data())
	if err != nil {
		s.fail(ctx, msg, d, err)
		return
	}
	m, err := s.composer.Compose(d, nil)
	if err != nil {
		s.fail(ctx, msg, d, err)
		return
	}
	receipt, err := s.chain.send(ctx, m)
	switch {
	case err == nil:
		s.delivered(ctx, msg, d, receipt)
	case email.IsPermanent(err):
		s.fail(ctx, msg, d, err)
	default:
		s.retry(ctx, msg, d, err)
	}
}

func (s *Service) delivered(ctx context.Context, msg jetstream.Msg, d notification.Delivery, r email.Receipt) {
	s.count(ctx, d, r.Provider, "delivered")
	if !d.CreatedAt.IsZero() {
		s.latency.Record(ctx, time.Since(d.CreatedAt).Seconds(), metric.WithAttributes(
			attribute.String("channel", string(d.Channel)), attribute.String("tenant", d.Tenant)))
	}
	log := s.cfg.Logger.With("notification_id", d.ID, "tenant", d.Tenant, "provider", r.Provider, "provider_message_id", r.MessageID)
	if err := msg.DoubleAck(ctx); err != nil {
		log.WarnContext(ctx, "delivered, but the ack was not confirmed; a redelivery may send again", "error", err)
		return
	}
	log.InfoContext(ctx, "delivered")
}

// retry asks for redelivery after a delay that grows with each delivery.
func (s *Service) retry(ctx context.Context, msg jetstream.Msg, d notification.Delivery, cause error) {
	s.count(ctx, d, "", "retry")
	delay := consumer.NakWithBackoff(msg, s.cfg.RetryDelay, 5*time.Minute)
	s.cfg.Logger.WarnContext(ctx, "every provider failed; will retry", "notification_id", d.ID, "tenant", d.Tenant,
		"retry_in", delay, "error", cause)
}

// fail dead-letters a delivery that cannot succeed, then terminates it.
func (s *Service) fail(ctx context.Context, msg jetstream.Msg, d notification.Delivery, cause error) {
	s.count(ctx, d, "", "failed")
	s.cfg.Logger.ErrorContext(ctx, "delivery failed permanently; dead-lettering", "notification_id", d.ID, "tenant", d.Tenant, "error", cause)
	if err := deadletter.Terminate(ctx, s.js, msg, cause.Error()); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "dead-lettering failed; the delivery will be redelivered", "notification_id", d.ID, "error", err)
		_ = msg.NakWithDelay(5 * time.Second)
	}
}

func (s *Service) count(ctx context.Context, d notification.Delivery, provider, outcome string) {
	s.outcomes.Add(ctx, 1, metric.WithAttributes(
		attribute.String("channel", string(event.ChannelEmail)), attribute.String("provider", provider),
		attribute.String("outcome", outcome), attribute.String("tenant", d.Tenant)))
}
