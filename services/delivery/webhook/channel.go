package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/webhooks"
)

// Endpoints is the registry as the channel uses it (webhooks.Store).
type Endpoints interface {
	Find(ctx context.Context, tenant, idOrURL string) (webhooks.Endpoint, error)
	Secrets(tenant string, e webhooks.Endpoint) ([][]byte, error)
	Disable(ctx context.Context, tenant, id, reason, cause string) (webhooks.Endpoint, bool, error)
	Failed(ctx context.Context, tenant, id string, now time.Time) (time.Time, error)
	Answered(ctx context.Context, tenant string, e webhooks.Endpoint) error
	Announce(ctx context.Context, pub jetstream.Publisher, tenant string) (int, error)
	StartAnnouncer(ctx context.Context, js jetstream.JetStream, cfg webhooks.AnnouncerConfig) (*webhooks.Announcer, error)
}

// ChannelConfig configures the webhook channel's adapter.
type ChannelConfig struct {
	// Endpoints are the tenants' registered endpoints. Required: Herald
	// signs and posts only to an endpoint its tenant registered.
	Endpoints Endpoints
	// Sender posts. Defaults to one on NewClient's guarded client.
	Sender *Sender
	// DisableAfter is how long an endpoint may keep failing before it is
	// disabled. Defaults to 5 days.
	DisableAfter time.Duration
	// AnnounceEvery is how often a disabling whose event could not be
	// published is told again (webhooks.Announcer). Defaults to a minute.
	AnnounceEvery time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Channel is the delivery protocol's adapter for webhooks: a notification
// on the webhook channel is a signed POST to one of its tenant's
// registered endpoints, named by the recipient's address (its id, or its
// URL). An endpoint that answers 410 Gone, or keeps failing for
// DisableAfter, is disabled, and its tenant told: a
// webhook.endpoint_disabled event on notify.status.<tenant>, which the
// status feed sends to the tenant's other endpoints. The event is recorded
// with the disabling, in one write, and published from there: by the
// worker that disabled it, or — should it die first — by the announcer of
// any worker, which runs from Open to Close.
type Channel struct {
	cfg       ChannelConfig
	js        jetstream.Publisher
	announcer *webhooks.Announcer
}

// NewChannel returns the adapter.
func NewChannel(cfg ChannelConfig) (*Channel, error) {
	if cfg.Endpoints == nil {
		return nil, errors.New("webhook: no endpoint registry")
	}
	if cfg.Sender == nil {
		cfg.Sender = &Sender{Client: NewClient(ClientOptions{})}
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = 5 * 24 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Channel{cfg: cfg}, nil
}

// Name implements delivery.Channel.
func (c *Channel) Name() event.Channel { return event.ChannelWebhook }

// LongestChain implements delivery.Channel: one endpoint per notification.
func (c *Channel) LongestChain() int { return 1 }

// Open implements delivery.Channel: the tenants' status events are
// published on js, and those a worker left untold are told now.
func (c *Channel) Open(ctx context.Context, js jetstream.JetStream) error {
	c.Close() // opened again after a stop, it follows the bucket anew
	a, err := c.cfg.Endpoints.StartAnnouncer(ctx, js, webhooks.AnnouncerConfig{Every: c.cfg.AnnounceEvery, Logger: c.cfg.Logger})
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	c.js, c.announcer = js, a
	return nil
}

// Close ends what Open began.
func (c *Channel) Close() {
	if c.announcer != nil {
		c.announcer.Stop()
		c.announcer = nil
	}
}

// Prepare implements delivery.Channel.
func (c *Channel) Prepare(ctx context.Context, d notification.Delivery) (delivery.Try, error) {
	e, err := c.cfg.Endpoints.Find(ctx, d.Tenant, d.Recipient.Address)
	if errors.Is(err, webhooks.ErrNotFound) {
		return delivery.Try{}, provider.Permanent(err)
	}
	if err != nil {
		return delivery.Try{}, err
	}
	if e.Status != webhooks.Active {
		return delivery.Try{}, provider.Permanentf("endpoint %s is disabled: %s", e.ID, e.DisabledReason)
	}
	secrets, err := c.cfg.Endpoints.Secrets(d.Tenant, e)
	if err != nil {
		return delivery.Try{}, provider.Permanent(err)
	}
	// A redelivery is the original again: its webhook-id, and its body.
	if d.RedeliveryOf != "" {
		d.ID = d.RedeliveryOf
	}
	msg := Message{ID: d.ID, URL: e.URL, Secrets: secrets}
	if msg.Type, msg.Body, err = payload(d); err != nil {
		return delivery.Try{}, provider.Permanent(err)
	}
	return delivery.Try{Calls: []delivery.Call{{Provider: "webhook", Breaker: d.Tenant + "/" + e.ID,
		Send: func(ctx context.Context) (provider.Receipt, error) { return c.send(ctx, d.Tenant, e, msg) }}}}, nil
}

// send posts msg and keeps the endpoint's health: answered, failing since
// when, or disabled.
func (c *Channel) send(ctx context.Context, tenant string, e webhooks.Endpoint, msg Message) (provider.Receipt, error) {
	ctx = resource.WithActor(ctx, "delivery") // what it records of the endpoint, a disabling most of all
	r, err := c.cfg.Sender.Send(ctx, msg)
	if err == nil {
		if aerr := c.cfg.Endpoints.Answered(context.WithoutCancel(ctx), tenant, e); aerr != nil {
			c.cfg.Logger.WarnContext(ctx, "could not record that a webhook endpoint answers", "tenant", tenant, "endpoint", e.ID, "error", aerr)
		}
		return r, nil
	}
	reason := ""
	if errors.Is(err, ErrGone) {
		reason = "the endpoint answered 410 Gone"
	} else if since, ferr := c.cfg.Endpoints.Failed(context.WithoutCancel(ctx), tenant, e.ID, time.Now()); ferr == nil && time.Since(since) > c.cfg.DisableAfter {
		reason = fmt.Sprintf("failing since %s, longer than webhooks.disable_after (%s): %v", since.Format(time.RFC3339), c.cfg.DisableAfter, err)
	}
	if reason != "" {
		c.disable(ctx, tenant, e, reason, msg.ID)
		return r, provider.Permanentf("endpoint %s disabled: %s", e.ID, reason)
	}
	return r, err
}

// statusTimeout bounds telling the tenant that an endpoint was disabled.
const statusTimeout = 15 * time.Second

// disable stops sending to the endpoint and, if this call is the one that
// disabled it, tells the tenant. The webhook that disabled it is given up
// (a permanent failure), so its dead letter is what alerts the operators.
func (c *Channel) disable(ctx context.Context, tenant string, e webhooks.Endpoint, reason, notificationID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusTimeout)
	defer cancel()
	_, disabled, err := c.cfg.Endpoints.Disable(ctx, tenant, e.ID, reason, notificationID)
	switch {
	case err != nil:
		c.cfg.Logger.WarnContext(ctx, "could not disable a webhook endpoint", "tenant", tenant, "endpoint", e.ID, "error", err)
		return
	case !disabled:
		return // another worker did, and told the tenant
	}
	c.cfg.Logger.WarnContext(ctx, "webhook endpoint disabled", "tenant", tenant, "endpoint", e.ID, "reason", reason)
	if c.js == nil {
		return
	}
	if _, err := c.cfg.Endpoints.Announce(ctx, c.js, tenant); err != nil {
		c.cfg.Logger.WarnContext(ctx, "the tenant is not told yet that its webhook endpoint was disabled; the announcer will tell it",
			"tenant", tenant, "endpoint", e.ID, "error", err)
	}
}

// Body is a webhook's JSON body, per the Standard Webhooks payload
// structure: what happened, when, and its data.
type Body struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// NotificationData is what a webhook-channel notification tells its
// endpoint: the business event it is about, and its order or stock item
// and document.
type NotificationData struct {
	NotificationID string                     `json:"notification_id"`
	Tenant         string                     `json:"tenant"`
	Template       string                     `json:"template"`
	Recipient      notification.Recipient     `json:"recipient"`
	Event          notification.EventRef      `json:"event"`
	Order          *notification.OrderSummary `json:"order,omitempty"`
	Stock          *event.Stock               `json:"stock,omitempty"`
	Document       *notification.Document     `json:"document,omitempty"`
	// Digest, from a workflow's digest step, lists every event gathered.
	Digest *notification.Digest `json:"digest,omitempty"`
}

// payload is the body a delivery carries (the status feed writes its own),
// or one made of the notification: its event's type, and what it is about.
func payload(d notification.Delivery) (string, []byte, error) {
	if len(d.Payload) > 0 {
		var b Body
		if err := json.Unmarshal(d.Payload, &b); err != nil {
			return "", nil, fmt.Errorf("the webhook's payload is not a JSON object with a type: %w", err)
		}
		return b.Type, d.Payload, nil
	}
	b := Body{Type: d.Event.Type, Timestamp: d.CreatedAt, Data: NotificationData{
		NotificationID: d.ID, Tenant: d.Tenant, Template: d.Template, Recipient: d.Recipient, Event: d.Event,
		Order: d.Order, Stock: d.Stock, Document: d.Document, Digest: d.Digest,
	}}
	body, err := json.Marshal(b)
	return b.Type, body, err
}
