package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/health"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/redact"
	"github.com/heraldhq/herald/shared/redisconn"
	"github.com/heraldhq/herald/streams"
)

func (a *App) connect(ctx context.Context) error {
	a.ncClosed = make(chan struct{})
	nc, err := nats.Connect(a.cfg.NATS.URL,
		nats.Name("herald "+strings.Join(a.cfg.Services, ",")),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				a.logger.Warn("disconnected from NATS; reconnecting", "error", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { a.logger.Info("reconnected to NATS", "url", c.ConnectedUrlRedacted()) }),
		nats.ClosedHandler(func(*nats.Conn) { close(a.ncClosed) }),
	)
	if err != nil {
		return fmt.Errorf("nats: connecting to %s: %w", redact.URL(a.cfg.NATS.URL), redact.Error(err, a.cfg.NATS.URL))
	}
	a.nc = nc
	// Workflows wait on scheduled messages: an older server would refuse
	// the RUNS stream, or hold waits that never fire.
	if err := streams.CheckServerVersion(nc.ConnectedServerVersion()); err != nil {
		return fmt.Errorf("nats at %s: %w", nc.ConnectedUrlRedacted(), err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(notification.AckTimeout))
	if err != nil {
		return err
	}
	// Every bucket and object store the services bind through a.js reports
	// its writes: a store that keeps refusing them fails readiness.
	stores, err := health.NewStores(a.tel.MeterProvider())
	if err != nil {
		return err
	}
	a.js = stores.Watch(js)
	a.checks.Add("stores", stores.Check)
	a.checks.Add("nats", func(context.Context) error {
		if s := nc.Status(); s != nats.CONNECTED {
			return fmt.Errorf("nats connection is %s", s)
		}
		return nil
	})
	a.checks.Add("streams", a.streamsPresent)
	if a.rdb != nil {
		if err := a.rdb.Ping(ctx).Err(); err != nil {
			a.logger.WarnContext(ctx, "redis is not reachable yet; deliveries wait for it", "redis", redact.URL(a.cfg.Redis.URL),
				"error", redact.Error(err, a.cfg.Redis.URL))
		}
		a.checks.Add("redis", func(ctx context.Context) error { return redact.Error(a.rdb.Ping(ctx).Err(), a.cfg.Redis.URL) })
		// Behind Sentinel or as a Cluster: a failover is logged and counted
		// once (herald_redis_master_changes_total, herald_redis_masters).
		m, err := redisconn.FollowMasters(a.cfg.Redis.URL, a.rdb, a.redisKind, a.logger.With("component", "redis"),
			a.tel.MeterProvider(), 5*time.Second)
		if err != nil {
			return redact.Error(err, a.cfg.Redis.URL)
		}
		a.masters = m
		if m != nil {
			a.checks.Note("redis", func() string { return string(a.redisKind) + ", masters " + strings.Join(m.Now(), " ") })
		}
	}
	return nil
}

func (a *App) applyStreams(ctx context.Context) error {
	report, err := streams.Apply(ctx, a.js, a.cfg.StreamOptions())
	if err != nil {
		return fmt.Errorf("applying streams: %w", err)
	}
	for _, r := range report {
		switch {
		case r.Action == streams.Created:
			a.logger.InfoContext(ctx, "created from declaration", "kind", r.Kind, "stream", r.Stream, "name", r.Name)
		case r.Action == streams.Removed: // a switch of scheduling.fair, not drift
			a.logger.InfoContext(ctx, "removed consumer: scheduling switched", "stream", r.Stream, "name", r.Name, "note", r.String())
		case r.Action != streams.Unchanged && r.Action != streams.Template:
			a.logger.WarnContext(ctx, "server differed from declaration", "kind", r.Kind, "stream", r.Stream, "name", r.Name,
				"action", r.Action, "changes", r.Changes)
		}
	}
	if err := report.Err(); err != nil {
		return fmt.Errorf("the server refused stream declarations; fix the server or the files, then restart:\n%w", err)
	}
	return nil
}

// streamsPresent is ready when every declared stream exists.
func (a *App) streamsPresent(ctx context.Context) error {
	declared, err := streams.Load()
	if err != nil {
		return err
	}
	var existing []string
	names := a.js.StreamNames(ctx)
	for n := range names.Name() {
		existing = append(existing, n)
	}
	if err := names.Err(); err != nil {
		return err
	}
	var missing []string
	for _, s := range declared {
		if !slices.Contains(existing, s.Config.Name) {
			missing = append(missing, s.Config.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("streams missing: %s", strings.Join(missing, ", "))
	}
	return nil
}
