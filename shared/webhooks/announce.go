package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/kvmirror"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/resource"
)

// Announce publishes the tenant's endpoint_disabled events that Disable
// recorded and no one has published yet, then takes those published out
// of the record (a revision-checked write), and returns how many it
// published.
//
// Each event's Nats-Msg-Id names its endpoint and the time it was disabled
// (EndpointDisabled.MsgID), so workers that announce the same event at
// once — the one that disabled the endpoint, and a sweep — store it once
// within STATUS' duplicate window. An event published by a worker that
// died before taking it out is published again by the next; past that
// window the status feed's webhooks, keyed the same way, are still sent
// once (the ledger holds their dedupe keys).
func (s *Store) Announce(ctx context.Context, pub jetstream.Publisher, tenant string) (int, error) {
	r, _, err := s.read(ctx, tenant)
	if err != nil || len(r.Unannounced) == 0 {
		return 0, err
	}
	var (
		published []string
		failed    error
	)
	for _, ev := range r.Unannounced {
		if failed = notification.PublishEndpointDisabled(ctx, pub, ev); failed != nil {
			failed = fmt.Errorf("webhooks: telling tenant %q that endpoint %s was disabled: %w", tenant, ev.EndpointID, failed)
			break
		}
		published = append(published, ev.MsgID())
	}
	if len(published) == 0 {
		return 0, failed
	}
	err = s.update(ctx, tenant, func(r *record) error {
		before := len(r.Unannounced)
		r.Unannounced = slices.DeleteFunc(r.Unannounced, func(ev notification.EndpointDisabled) bool {
			return slices.Contains(published, ev.MsgID())
		})
		if len(r.Unannounced) == before {
			return errNothingToWrite // another announcer took them out first
		}
		return nil
	})
	return len(published), errors.Join(failed, err)
}

// AnnouncerConfig configures an Announcer.
type AnnouncerConfig struct {
	// Every is how often the events still unannounced are published
	// again. Defaults to a minute.
	Every time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Announcer finishes what a worker that died between disabling an
// endpoint and telling its tenant began. It follows the bucket for the
// tenants whose record holds unannounced events, and announces them when
// it starts — so a worker's restart tells what its crash left untold —
// and every Every after, so a publish that failed is tried again while the
// worker lives. Stop ends it.
type Announcer struct {
	store   *Store
	pub     jetstream.Publisher
	cfg     AnnouncerConfig
	pending *kvmirror.Mirror[struct{}]
	cancel  context.CancelFunc
	done    chan struct{}
}

// sweepTimeout bounds announcing one tenant's events.
const sweepTimeout = 15 * time.Second

// StartAnnouncer reads which tenants have events to announce (ctx bounds
// that read) and starts announcing them on js.
func (s *Store) StartAnnouncer(ctx context.Context, js jetstream.JetStream, cfg AnnouncerConfig) (*Announcer, error) {
	if cfg.Every <= 0 {
		cfg.Every = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pending, err := kvmirror.Watch(ctx, js, Bucket, func(e jetstream.KeyValueEntry) (struct{}, bool) {
		var r record
		return struct{}{}, json.Unmarshal(e.Value(), &r) == nil && len(r.Unannounced) > 0
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: following the endpoints for events to announce: %w", err)
	}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &Announcer{store: s, pub: js, cfg: cfg, pending: pending, cancel: cancel, done: make(chan struct{})}
	go a.run(actx)
	return a, nil
}

// Stop ends the announcer and waits for it.
func (a *Announcer) Stop() {
	a.cancel()
	<-a.done
	a.pending.Stop()
}

func (a *Announcer) run(ctx context.Context) {
	defer close(a.done)
	t := time.NewTicker(a.cfg.Every)
	defer t.Stop()
	for {
		a.sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep announces the events of every tenant the bucket says has some.
func (a *Announcer) sweep(ctx context.Context) {
	for _, tenant := range a.pending.Keys() {
		tctx, cancel := context.WithTimeout(resource.WithActor(ctx, "webhook-announcer"), sweepTimeout)
		n, err := a.store.Announce(tctx, a.pub, tenant)
		cancel()
		if err != nil {
			a.cfg.Logger.WarnContext(ctx, "a disabled webhook endpoint's event is not told yet; trying again", "tenant", tenant,
				"published", n, "every", a.cfg.Every, "error", err)
		} else if n > 0 {
			a.cfg.Logger.InfoContext(ctx, "told a tenant that its webhook endpoints were disabled", "tenant", tenant, "events", n)
		}
	}
}
