package inbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Locker elects one sweeper among the inbox's replicas (lock.Redis).
type Locker interface {
	Acquire(ctx context.Context, key string, ttl time.Duration) (*lock.Lease, error)
}

// SweepConfig configures the retention sweep: a feed nobody writes to
// still loses what its tenant's retention no longer keeps.
type SweepConfig struct {
	// Channel says each tenant's limits (Channel.Limits). Required.
	Channel *Channel
	// Locker elects the one replica that sweeps; without one, every
	// replica sweeps (each drop is the same whoever makes it, only wasted).
	Locker Locker
	// Interval is how often the sweep runs. Defaults to an hour; negative:
	// never (a test calls Sweep).
	Interval time.Duration
	// MaxFeeds is the most feeds one pass changes; the next pass goes on.
	// Defaults to 1000.
	MaxFeeds int
	// Tenants bounds the tenant label of the sweep's metric. Defaults to
	// telemetry.DefaultMaxTenants.
	Tenants *telemetry.Labels
	// Logger defaults to discarding.
	Logger *slog.Logger
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider
}

// WithDefaults returns the config with every unset field filled in.
func (c SweepConfig) WithDefaults() SweepConfig {
	c.Interval = cmp.Or(c.Interval, time.Hour)
	c.MaxFeeds = cmp.Or(c.MaxFeeds, 1000)
	if c.Tenants == nil {
		c.Tenants = telemetry.NewTenantLabels(telemetry.DefaultMaxTenants)
	}
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	return c
}

// Sweeper runs the retention sweep on a schedule.
type Sweeper struct {
	cfg     SweepConfig
	js      jetstream.JetStream
	store   *inbox.Store
	dropped metric.Int64Counter
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// NewSweeper returns the sweep over js's feeds.
func NewSweeper(js jetstream.JetStream, cfg SweepConfig) (*Sweeper, error) {
	cfg = cfg.WithDefaults()
	if cfg.Channel == nil {
		return nil, errors.New("inbox sweep: a channel is required")
	}
	dropped, err := cfg.MeterProvider.Meter("herald/inbox").Int64Counter("herald.inbox.swept",
		metric.WithDescription("Inbox items the retention sweep dropped from feeds nobody wrote to, by tenant."))
	if err != nil {
		return nil, fmt.Errorf("inbox sweep: %w", err)
	}
	return &Sweeper{cfg: cfg, js: js, dropped: dropped}, nil
}

// Start opens the feeds' store and sweeps at once, then every Interval.
func (s *Sweeper) Start(ctx context.Context) error {
	store, err := inbox.Open(ctx, s.js)
	if err != nil {
		return fmt.Errorf("inbox sweep: %w", err)
	}
	s.store = store
	if s.cfg.Interval < 0 {
		return nil
	}
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.wg.Go(func() { s.loop(ctx) })
	return nil
}

// Stop ends the schedule and waits for a pass under way.
func (s *Sweeper) Stop(context.Context) error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

func (s *Sweeper) loop(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		swept, err := s.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.cfg.Logger.WarnContext(ctx, "inbox retention sweep failed in part; the next one goes on",
				"items", swept.Items, "feeds", swept.Feeds, "error", err)
		case swept.Items > 0:
			s.cfg.Logger.InfoContext(ctx, "inbox retention sweep", "items", swept.Items, "feeds", swept.Feeds,
				"tenants", slices.Sorted(maps.Keys(swept.Tenants)), "more", swept.More)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep drops from every feed what its tenant's limits no longer keep, at
// most MaxFeeds feeds changed; with a Locker, only on the replica that
// holds the sweep's lease (another's pass returns nothing swept).
func (s *Sweeper) Sweep(ctx context.Context) (inbox.Swept, error) {
	if s.cfg.Locker != nil {
		// Held for an interval (an hour at most), so a sweeper that dies
		// mid-pass hands over by the next tick.
		lease, err := s.cfg.Locker.Acquire(ctx, "inbox-sweep", max(min(s.cfg.Interval, time.Hour), time.Minute))
		if errors.Is(err, lock.ErrHeld) {
			return inbox.Swept{}, nil
		}
		if err != nil {
			return inbox.Swept{}, fmt.Errorf("electing the inbox sweeper: %w", err)
		}
		defer func() { _ = lease.Release(context.WithoutCancel(ctx)) }()
	}
	swept, err := s.store.SweepAll(ctx, s.cfg.Channel.Limits, s.cfg.MaxFeeds)
	for tenant, n := range swept.Tenants {
		s.dropped.Add(ctx, int64(n), metric.WithAttributes(attribute.String("tenant", s.cfg.Tenants.Value(tenant))))
	}
	return swept, err
}
