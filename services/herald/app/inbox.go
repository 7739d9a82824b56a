package app

import (
	"context"

	"github.com/heraldhq/herald/services/delivery"
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
// inbox bucket, which the adapter opens on the protocol's connection.
func (a *App) buildInbox(ctx context.Context) (service, error) {
	registry, err := a.tenantCache(ctx)
	if err != nil {
		return nil, err
	}
	c := a.inboxC
	c.Registry, c.Quotas, c.Rates = registry, a.quotas(registry), a.rates(registry)
	if err := a.openCircuits(ctx); err != nil {
		return nil, err
	}
	return delivery.New(a.js, c)
}
