package app

import (
	"context"

	inboxchannel "github.com/heraldhq/herald/services/delivery/inbox"
	"github.com/heraldhq/herald/shared/event"
)

// configureInbox reads inbox: and checks the adapter's limits, before
// anything connects.
func (a *App) configureInbox() error {
	ch, err := inboxchannel.NewChannel(inboxchannel.ChannelConfig{Retention: a.cfg.Inbox.Retention, MaxItems: a.cfg.Inbox.MaxItems})
	if err != nil {
		return err
	}
	a.inboxC = a.deliveryConfig(ch, string(event.ChannelInbox), a.cfg.Inbox.DeliveryConfig, []string{"inbox"})
	return a.inboxC.Validate()
}

// buildInbox writes each notification into its subscriber's feed, the
// inbox bucket, which the adapter opens on the protocol's connection —
// each tenant's items kept as long as its retention.inbox says — and
// sweeps the feeds nobody writes to, on the one replica that holds the
// sweep's lease.
func (a *App) buildInbox(ctx context.Context) (service, error) {
	registry, err := a.tenantCache(ctx)
	if err != nil {
		return nil, err
	}
	ch, err := inboxchannel.NewChannel(inboxchannel.ChannelConfig{Retention: a.cfg.Inbox.Retention,
		MaxItems: a.cfg.Inbox.MaxItems, Tenants: registry})
	if err != nil {
		return nil, err
	}
	d, err := a.deliveryService(ctx, a.inboxC, ch, registry)
	if err != nil {
		return nil, err
	}
	sweep, err := inboxchannel.NewSweeper(a.js, inboxchannel.SweepConfig{Channel: ch, Locker: a.inboxC.Locker,
		Tenants: a.tenants, Logger: a.logger.With("service", "inbox-sweep"), MeterProvider: a.tel.MeterProvider()})
	if err != nil {
		return nil, err
	}
	return services{d, sweep}, nil
}
