// Package inbox is the delivery protocol's adapter for the in-app inbox: a
// notification becomes one item in its subscriber's feed (shared/inbox),
// in the subscriber's language, with the same words as its push.
package inbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/apptext"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/tenant"
)

// CallName is the provider the inbox write is known by in receipts, logs,
// metrics and the ledger.
const CallName = "inbox"

// MaxActionURL is the longest action URL an item keeps, in bytes
// (notification.CheckActionURL is the rule).
const MaxActionURL = notification.MaxActionURL

// ChannelConfig configures the inbox channel.
type ChannelConfig struct {
	// Store is the feeds' store. Defaults to inbox.Open on the protocol's
	// JetStream, at Open.
	Store *inbox.Store
	// Composer writes the items. Defaults to apptext.New() (share the
	// push channel's).
	Composer *apptext.Composer
	// Retention is how long an item is kept (YAML inbox.retention), unless
	// its tenant sets its own (retention.inbox). Defaults to 90 days.
	Retention time.Duration
	// Tenants are where each tenant's own retention is read (tenant.Cache).
	// Defaults to none: every tenant's items are kept for Retention.
	Tenants Tenants
	// MaxItems caps each subscriber's feed (YAML inbox.max_items).
	// Defaults to 1000, at most inbox.MaxCap.
	MaxItems int
}

// Tenants is the tenant registry as the inbox reads it (tenant.Cache).
type Tenants interface {
	Lookup(id string) (tenant.Tenant, bool)
}

// Channel writes notifications to their subscribers' feeds.
type Channel struct {
	cfg    ChannelConfig
	limits inbox.Limits
}

// NewChannel validates cfg and returns the channel.
func NewChannel(cfg ChannelConfig) (*Channel, error) {
	var problems []error
	if cfg.Retention < 0 {
		problems = append(problems, fmt.Errorf("inbox.retention: must not be negative (got %s)", cfg.Retention))
	}
	if cfg.MaxItems < 0 || cfg.MaxItems > inbox.MaxCap {
		problems = append(problems, fmt.Errorf("inbox.max_items: %d is not a number of items from 1 to %d", cfg.MaxItems, inbox.MaxCap))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	if cfg.Composer == nil {
		var err error
		if cfg.Composer, err = apptext.New(); err != nil {
			return nil, fmt.Errorf("inbox: %w", err)
		}
	}
	limits := inbox.Limits{Retention: cfg.Retention, Cap: cfg.MaxItems}.WithDefaults()
	return &Channel{cfg: cfg, limits: limits}, nil
}

// Name implements delivery.Channel.
func (c *Channel) Name() event.Channel { return event.ChannelInbox }

// LongestChain implements delivery.Channel: one write to the store.
func (c *Channel) LongestChain() int { return 1 }

// Open implements delivery.Channel: it binds the feeds' store, unless the
// app gave one.
func (c *Channel) Open(ctx context.Context, js jetstream.JetStream) error {
	if c.cfg.Store != nil {
		return nil
	}
	store, err := inbox.Open(ctx, js)
	if err != nil {
		return err
	}
	c.cfg.Store = store
	return nil
}

// ItemID is the feed item a delivery writes: its notification's id, so a
// retried or redelivered message is one item, and a redelivery of a
// notification (herald's redeliver) the same item again — kept as the
// subscriber left it, read or not, rather than a second copy.
func ItemID(d notification.Delivery) string { return cmp.Or(d.RedeliveryOf, d.ID) }

// Prepare implements delivery.Channel: it composes the item in the
// delivery's language; the try is its one write.
func (c *Channel) Prepare(ctx context.Context, d notification.Delivery) (delivery.Try, error) {
	subscriber := cmp.Or(d.Recipient.Subscriber, d.Recipient.Address)
	if subscriber == "" {
		return delivery.Try{}, provider.Permanentf("an inbox item goes to a subscriber, and this notification names none")
	}
	item, err := c.item(d)
	if err != nil {
		return delivery.Try{}, err
	}
	return delivery.Try{Calls: []delivery.Call{{
		Provider: CallName,
		// The store is the platform's, but a tenant's trouble with it
		// (a feed contended beyond reason) opens no other tenant's breaker.
		Breaker: CallName + "/" + d.Tenant,
		Send:    func(ctx context.Context) (provider.Receipt, error) { return c.add(ctx, d.Tenant, subscriber, item) },
	}}}, nil
}

// item is d as its feed's item.
func (c *Channel) item(d notification.Delivery) (inbox.Item, error) {
	text, err := c.cfg.Composer.Compose(d)
	if err != nil {
		return inbox.Item{}, err
	}
	if text.Title == "" {
		return inbox.Item{}, provider.Permanentf("an inbox item needs a title, and this notification has none")
	}
	link, err := actionURL(d.ActionURL)
	if err != nil {
		return inbox.Item{}, err
	}
	id := ItemID(d)
	return inbox.Item{
		ID: id, Notification: id, Title: text.Title, Body: text.Body, ActionURL: link,
		Document: d.Document, Category: d.Category, Run: d.Run,
	}, nil
}

// actionURL is raw if it is a link an item may carry
// (notification.CheckActionURL); anything else a browser would run or
// resolve against the app, so it fails the notification for good rather
// than reach a feed.
func actionURL(raw string) (string, error) {
	if err := notification.CheckActionURL(raw); err != nil {
		return "", provider.Permanentf("%w", err)
	}
	return raw, nil
}

// add writes the item. The store failing is transient: the protocol
// retries, and the item's id makes the retry the same item.
func (c *Channel) add(ctx context.Context, tenantID, subscriber string, item inbox.Item) (provider.Receipt, error) {
	if _, _, err := c.cfg.Store.Add(ctx, tenantID, subscriber, item, c.Limits(tenantID)); err != nil {
		return provider.Receipt{}, fmt.Errorf("writing the inbox item: %w", err)
	}
	return provider.Receipt{Provider: CallName, MessageID: item.ID}, nil
}

// Limits are the limits of a tenant's feeds: its own retention if it sets
// one, else the deployment's; the deployment's cap.
func (c *Channel) Limits(tenantID string) inbox.Limits {
	l := c.limits
	if c.cfg.Tenants == nil {
		return l
	}
	if t, ok := c.cfg.Tenants.Lookup(tenantID); ok && t.Retention.Inbox != 0 {
		l.Retention = t.Retention.Inbox.Duration()
	}
	return l
}
