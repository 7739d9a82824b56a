// Package workflow runs the steps of routes that have them: per recipient,
// a run sends, waits (for a time, until a time, until an order's event),
// throttles, gathers into digests, holds for a window, and ends or is
// cancelled by the order's events. Time lives in JetStream:
// a waiting step is a scheduled message on its own subject of RUNS
// (runs.timer.<tenant>.<run>.<step>, Nats-Schedule @at, target
// runs.wake.<tenant>), purged when an event ends the wait; a run is a KV
// entry (KV_runs) changed only by compare-and-set. No goroutine sleeps on
// a run's behalf, and a restarted process finds every run where it was.
package workflow

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

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Config configures the workflow service.
type Config struct {
	// Concurrency is how many runs' messages are handled at once.
	// Defaults to 4.
	Concurrency int `yaml:"concurrency,omitempty"`

	// Logger defaults to discarding.
	Logger *slog.Logger `yaml:"-"`
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider `yaml:"-"`
	// Tenants bounds the tenant label of metrics. Defaults to
	// telemetry.DefaultMaxTenants tenants.
	Tenants *telemetry.Labels `yaml:"-"`
	// TracerProvider, when set, traces every message handled.
	TracerProvider trace.TracerProvider `yaml:"-"`
}

// WithDefaults returns the config with every unset field filled in.
func (c Config) WithDefaults() Config {
	c.Concurrency = cmp.Or(c.Concurrency, 4)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	if c.Tenants == nil {
		c.Tenants = telemetry.NewTenantLabels(telemetry.DefaultMaxTenants)
	}
	return c
}

// Validate reports every problem with a defaulted config, each naming its
// field as it appears in the YAML file (under workflow:).
func (c Config) Validate() error {
	if c.Concurrency < 1 {
		return fmt.Errorf("workflow.concurrency: must be 1 or more (got %d)", c.Concurrency)
	}
	return nil
}

// class names the service's consumers of runs.in: workflow_<tenant>;
// wakeClass those of runs.wake, which take wakeWeight turns to one of
// runs.in while both have work: a timer due goes ahead of runs starting.
const (
	class = "workflow"
	// discover is how often the service asks RUNS which tenants have
	// messages waiting.
	discover   = 100 * time.Millisecond
	wakeClass  = "workflow-wake"
	wakeWeight = 4
)

// consumerTemplate is each tenant's consumer: a run's message is handled within
// seconds; one that keeps failing is dead-lettered.
var consumerTemplate = jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
	MaxDeliver: 20, MaxAckPending: 1000, MaxWaiting: 512}

// Service takes runs.in.<tenant> and runs.wake.<tenant>: starts runs, wakes
// them, ends them.
type Service struct {
	cfg    Config
	js     jetstream.JetStream
	runs   store
	stream jetstream.Stream
	loop   *consumer.Fair
	now    func() time.Time
	// people are the subscribers, for a window's time zone; counters the
	// throttles'.
	people   *resource.Store[recipient.Subscriber]
	counters *quota.Counter
	// steps counts the steps taken, by kind and outcome; dropped the
	// messages that found no run to move (a stale timer, a run expired).
	steps, dropped metric.Int64Counter
}

// New validates cfg (after filling its defaults) and returns the service.
func New(js jetstream.JetStream, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, js: js, now: func() time.Time { return time.Now().UTC() }}
	m := cfg.MeterProvider.Meter("github.com/heraldhq/herald/services/workflow")
	var errs [2]error
	s.steps, errs[0] = m.Int64Counter("herald.workflow.steps", metric.WithDescription("Workflow steps taken, by kind (send, wait, throttle, digest, window, cancel, end) and outcome (sent, waiting, woken, ended, passed, skipped, merged, cancelled, done, failed)."))
	s.dropped, errs[1] = m.Int64Counter("herald.workflow.dropped", metric.WithDescription("Messages that moved no run, by reason: stale_wake (a timer whose run moved on or ended), no_run (a run that no longer exists), ended (an event or a notification's status for a run that had ended), stale_flush (a digest's flush that found it flushed already, or every gathered run ended)."))
	return s, errors.Join(errs[:]...)
}

// Start takes the runs' messages, tenants in turn.
func (s *Service) Start(ctx context.Context) error {
	var err error
	if s.runs, err = openStore(ctx, s.js); err != nil {
		return fmt.Errorf("workflow: %w", err)
	}
	if s.stream, err = s.js.Stream(ctx, router.RunsStream); err != nil {
		return fmt.Errorf("workflow: the %s stream: %w", router.RunsStream, err)
	}
	if s.people, err = resource.Open(ctx, s.js, recipient.Subscribers); err != nil {
		return fmt.Errorf("workflow: %w", err)
	}
	s.counters = quota.On(s.js, ThrottleStream)
	s.loop, err = consumer.StartFair(ctx, s.handle, consumer.FairConfig{
		Config: consumer.Config{JetStream: s.js, Concurrency: s.cfg.Concurrency, Logger: s.cfg.Logger,
			TracerProvider: s.cfg.TracerProvider, MeterProvider: s.cfg.MeterProvider},
		Stream: router.RunsStream,
		// A run's message takes a few round trips, not a provider's
		// seconds: a pull takes several of a tenant's at once.
		Batch: 16,
		// A timer that fires is stored by the server without a message
		// a subscriber hears: only discovery finds it on runs.wake, so
		// discovery is what a timer is late by.
		Discover: discover,
		Classes: []consumer.Class{{Name: wakeClass, Prefix: "runs.wake", Weight: wakeWeight, Template: consumerTemplate},
			{Name: class, Prefix: "runs.in", Weight: 1, Template: consumerTemplate}}})
	if err != nil {
		return fmt.Errorf("workflow: %w", err)
	}
	return nil
}

// Stop drains: the messages being handled finish and are acknowledged.
func (s *Service) Stop(ctx context.Context) error {
	if s.loop == nil {
		return nil
	}
	return s.loop.Stop(ctx)
}

// handle takes one message of runs.in.<tenant>.
func (s *Service) handle(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	var m router.RunMessage
	if err := json.Unmarshal(msg.Data(), &m); err != nil {
		return consumer.GiveUp(fmt.Errorf("malformed run message: %w", err))
	}
	tenant := msg.Subject()[strings.LastIndexByte(msg.Subject(), '.')+1:]
	var err error
	switch {
	case m.Kind == router.RunStartKind && m.Start != nil && m.Start.Tenant == tenant:
		err = s.start(ctx, *m.Start)
	case m.Kind == router.RunWakeKind && m.Wake != nil && strings.HasPrefix(m.Wake.Key, tenant+"."):
		err = s.wake(ctx, *m.Wake)
	case m.Kind == router.RunEventKind && m.Event != nil && m.Event.Tenant == tenant:
		err = s.event(ctx, *m.Event)
	case m.Kind == router.RunFlushKind && m.Flush != nil && m.Flush.Tenant == tenant:
		err = s.flush(ctx, *m.Flush, storedAt(msg))
	case m.Kind == router.RunSentKind && m.Sent != nil && strings.HasPrefix(m.Sent.Key, tenant+"."):
		err = s.sent(ctx, *m.Sent)
	case m.Kind == router.RunStatusKind && m.Status != nil && strings.HasPrefix(m.Status.Key, tenant+"."):
		err = s.status(ctx, *m.Status)
	default:
		return consumer.GiveUp(fmt.Errorf("run message of kind %q not for tenant %q, or without its part", m.Kind, tenant))
	}
	if errors.Is(err, errConflict) {
		return consumer.Retry(err, 50*time.Millisecond, time.Second)
	}
	if err != nil {
		return consumer.Retry(err, 2*time.Second, time.Minute)
	}
	return consumer.Done()
}

// storedAt is when msg was stored: for a flush, which items it takes.
func storedAt(msg jetstream.Msg) time.Time {
	if meta, err := msg.Metadata(); err == nil {
		return meta.Timestamp
	}
	return time.Now()
}

// count counts a step taken.
func (s *Service) count(ctx context.Context, r Run, kind, outcome string) {
	s.steps.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", kind), attribute.String("outcome", outcome),
		attribute.String("tenant", s.cfg.Tenants.Value(r.Tenant))))
}

// drop counts a message that moved no run.
func (s *Service) drop(ctx context.Context, tenant, reason string) {
	s.dropped.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason),
		attribute.String("tenant", s.cfg.Tenants.Value(tenant))))
}
