// Package dlq makes sure nothing Herald gives up on vanishes.
//
// Workers that give up on a message (a permanent refusal, a malformed
// event, a failed render) copy it to the DLQ themselves, then terminate it.
// Messages that simply run out of deliveries are different: the server
// keeps them in their stream and publishes a MAX_DELIVERIES advisory, which
// the ADVISORIES stream keeps even while this service is down. This service
// reads those advisories with the durable consumer "dlq", fetches each
// exhausted message by its stream sequence, writes it to
// dlq.<stream>.<consumer> with the last error (from the delivery ledger
// where there is one), and then removes it from its work-queue stream.
// Handling an advisory twice stores one entry: the second finds the
// original gone, or the DLQ's duplicate window drops the copy.
//
// It also raises alerts on new dead letters and on the monthly quota
// thresholds tenants reach (aggregated together, see alert/ and quota.go),
// exports the DLQ's depth, and runs the resend sweep (see sweep.go).
package dlq

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/services/dlq/alert"
	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
)

// The streams and consumers the service reads.
const (
	AdvisoryStream  = "ADVISORIES"
	AdvisoryDurable = "dlq"
	Stream          = "DLQ"
	AlertsDurable   = "alerts"
)

// Locker elects one sweeper among replicas (lock.Redis).
type Locker interface {
	Acquire(ctx context.Context, key string, ttl time.Duration) (*lock.Lease, error)
}

// Config configures the DLQ service.
type Config struct {
	// Alerts are where aggregated alerts go. Defaults to none (alerts are
	// then only logged and counted).
	Alerts []alert.Sender
	// AlertWindow is the longest time between two alerts while failures
	// keep coming. Defaults to 1 minute.
	AlertWindow time.Duration
	// Sweep configures the resend sweep.
	Sweep SweepConfig
	// Locker elects one sweeper among replicas. Without it every replica
	// sweeps (the ledger still prevents double sends).
	Locker Locker

	// Logger defaults to discarding.
	Logger *slog.Logger
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, traces every message handled; nil traces
	// nothing.
	TracerProvider trace.TracerProvider
}

// WithDefaults returns the config with every unset field filled in.
func (c Config) WithDefaults() Config {
	c.AlertWindow = cmp.Or(c.AlertWindow, time.Minute)
	c.Sweep = c.Sweep.withDefaults()
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	return c
}

// Validate checks a config WithDefaults filled in.
func (c Config) Validate() error {
	if c.AlertWindow < 0 {
		return fmt.Errorf("dlq.alerts.window: must not be negative (got %s)", c.AlertWindow)
	}
	return c.Sweep.validate()
}

// Service is the DLQ service.
type Service struct {
	cfg     Config
	js      jetstream.JetStream
	ledger  *ledger.Ledger
	alerts  *alert.Aggregator
	loops   consumer.Group
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	entries metric.Int64Counter
	gauge   metric.Registration
	// quotasSeen are the quota thresholds alerted (see handleStatus).
	quotasSeen seenThresholds
}

// New returns a DLQ service.
func New(js jetstream.JetStream, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, js: js}
	s.alerts = alert.New(alert.Config{Window: cfg.AlertWindow, Senders: cfg.Alerts, Logger: cfg.Logger, MeterProvider: cfg.MeterProvider})
	m := cfg.MeterProvider.Meter("github.com/heraldhq/herald/services/dlq")
	var err error
	s.entries, err = m.Int64Counter("herald.dlq.entries",
		metric.WithDescription("New dead letters, by stream, consumer and reason kind (alert.ReasonKinds)."))
	return s, err
}

// Start consumes advisories and new dead letters, and starts the alerting
// and the sweep.
func (s *Service) Start(ctx context.Context) error {
	l, err := ledger.Open(ctx, s.js)
	if err != nil {
		return fmt.Errorf("dlq: %w", err)
	}
	s.ledger = l
	if err := s.startGauge(); err != nil {
		return err
	}
	s.loops.Config = consumer.Config{JetStream: s.js, Concurrency: 4, Logger: s.cfg.Logger,
		TracerProvider: s.cfg.TracerProvider, MeterProvider: s.cfg.MeterProvider}
	for _, c := range []struct {
		stream, durable string
		handle          consumer.Handler
	}{{AdvisoryStream, AdvisoryDurable, s.handleAdvisory}, {Stream, AlertsDurable, s.handleEntry},
		{StatusStream, AlertsDurable, s.handleStatus}} {
		cons, err := consumer.Lookup(ctx, s.js, c.stream, c.durable)
		if err != nil {
			return fmt.Errorf("dlq: %w", err)
		}
		if err := s.loops.Start(ctx, cons, c.handle); err != nil {
			return fmt.Errorf("dlq: %w", err)
		}
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.wg.Go(func() { _ = s.alerts.Run(bg) })
	s.wg.Go(func() { s.sweepLoop(bg) })
	return nil
}

// Stop drains the consumers, flushes pending alerts and stops the sweep.
func (s *Service) Stop(ctx context.Context) error {
	err := s.loops.Stop(ctx)
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.gauge != nil {
		err = errors.Join(err, s.gauge.Unregister())
	}
	return err
}

// advisory is the part of a consumer advisory the service reads.
type advisory struct {
	Type       string `json:"type"`
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
	Reason     string `json:"reason"`
}

const maxDeliveriesType = "io.nats.jetstream.advisory.v1.max_deliver"

func (s *Service) handleAdvisory(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	var adv advisory
	if err := json.Unmarshal(msg.Data(), &adv); err != nil || adv.Stream == "" || adv.StreamSeq == 0 {
		return consumer.GiveUp(fmt.Errorf("unreadable advisory on %s", msg.Subject()))
	}
	if adv.Type != maxDeliveriesType {
		// Terminated messages were copied to the DLQ by whoever gave up on
		// them, before they terminated them.
		return consumer.Done()
	}
	err := s.copyExhausted(ctx, adv)
	switch {
	case err == nil:
		return consumer.Done()
	case errors.Is(err, deadletter.ErrRefused) || errors.Is(err, jetstream.ErrStreamNotFound):
		// The message can never be copied (the DLQ refuses it, or its
		// stream is gone): retried, it would fail forever. The advisory is
		// dead-lettered with why; the message it names stays in its stream,
		// and redriving the entry republishes the advisory — a new try.
		s.cfg.Logger.ErrorContext(ctx, "an exhausted message cannot be dead-lettered; dead-lettering its advisory",
			"stream", adv.Stream, "sequence", adv.StreamSeq, "error", err)
		return consumer.GiveUp(fmt.Errorf("could not dead-letter %s #%d (exhausted %d deliveries to %s): %w",
			adv.Stream, adv.StreamSeq, adv.Deliveries, adv.Consumer, err))
	}
	s.cfg.Logger.WarnContext(ctx, "could not dead-letter an exhausted message; will retry", "stream", adv.Stream,
		"sequence", adv.StreamSeq, "error", err)
	return consumer.Retry(err, time.Second, time.Minute)
}

// copyExhausted writes the exhausted message to the DLQ, then removes it
// from its stream if that is a work queue (an input log keeps its history).
func (s *Service) copyExhausted(ctx context.Context, adv advisory) error {
	stream, err := s.js.Stream(ctx, adv.Stream)
	if err != nil {
		return err
	}
	original, err := stream.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil // handled before, or settled after all
	}
	if err != nil {
		return err
	}
	reason := s.lastError(ctx, adv, original)
	if err := deadletter.Copy(ctx, s.js, adv.Stream, adv.Consumer, original, adv.Deliveries, reason); err != nil {
		return err
	}
	s.cfg.Logger.InfoContext(ctx, "dead-lettered an exhausted message", "stream", adv.Stream, "consumer", adv.Consumer,
		"sequence", adv.StreamSeq, "deliveries", adv.Deliveries, "reason", reason)
	if stream.CachedInfo().Config.Retention != jetstream.WorkQueuePolicy {
		return nil
	}
	if err := stream.DeleteMsg(ctx, adv.StreamSeq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("removing the original: %w", err)
	}
	return nil
}

// lastError says why a message ran out of deliveries: for a notification,
// the ledger's record of its last try; otherwise, that no worker settled it.
func (s *Service) lastError(ctx context.Context, adv advisory, m *jetstream.RawStreamMsg) string {
	generic := fmt.Sprintf("exhausted %d deliveries to %s > %s without being settled (worker crashes or timeouts)",
		adv.Deliveries, adv.Stream, adv.Consumer)
	d, err := notification.Decode(m.Data)
	if err != nil {
		return generic
	}
	e, err := s.ledger.Get(ctx, d.Tenant, d.DedupeKey)
	if err != nil || !e.Exists() || e.Reason == "" {
		return generic
	}
	return fmt.Sprintf("exhausted %d deliveries; last error: %s", adv.Deliveries, e.Reason)
}

// handleEntry counts a new dead letter and hands it to the alerts.
func (s *Service) handleEntry(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	h := msg.Headers()
	f := alert.Failure{
		Stream: h.Get(deadletter.HeaderStream), Consumer: h.Get(deadletter.HeaderConsumer),
		Subject: h.Get(deadletter.HeaderSubject), Tenant: h.Get(deadletter.HeaderTenant),
		Reason: h.Get(deadletter.HeaderReason), Time: time.Now().UTC(),
	}
	if t, err := time.Parse(time.RFC3339Nano, h.Get(deadletter.HeaderTime)); err == nil {
		f.Time = t
	}
	s.entries.Add(ctx, 1, metric.WithAttributes(attribute.String("stream", f.Stream), attribute.String("consumer", f.Consumer),
		attribute.String("reason", alert.ReasonKind(f.Reason))))
	s.alerts.Add(f)
	return consumer.Done()
}

// startGauge exports the DLQ's depth per source, read from the stream when
// Prometheus scrapes.
func (s *Service) startGauge() error {
	m := s.cfg.MeterProvider.Meter("github.com/heraldhq/herald/services/dlq")
	depth, err := m.Int64ObservableGauge("herald.dlq.depth", metric.WithDescription("Dead letters kept, by stream and consumer."))
	if err != nil {
		return err
	}
	s.gauge, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		stream, err := s.js.Stream(ctx, Stream)
		if err != nil {
			return err
		}
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter("dlq.>"))
		if err != nil {
			return err
		}
		for subject, n := range info.State.Subjects {
			src, cons := splitSubject(subject)
			o.ObserveInt64(depth, int64(n), metric.WithAttributes(attribute.String("stream", src), attribute.String("consumer", cons)))
		}
		return nil
	}, depth)
	return err
}

func splitSubject(subject string) (stream, consumer string) {
	parts := strings.SplitN(subject, ".", 3)
	if len(parts) < 3 {
		return "", ""
	}
	return parts[1], parts[2]
}
