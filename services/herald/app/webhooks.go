package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/webhooks"
)

// configureWebhook reads webhooks: and checks it with the protocol's
// settings, so a bad value stops start-up like any other channel's. The
// adapter needs the endpoint registry, which needs NATS: it is built with
// the service.
func (a *App) configureWebhook() error {
	w := &a.cfg.Webhooks
	w.MaxTries = cmp.Or(w.MaxTries, 15)
	w.RetryDelay = cmp.Or(w.RetryDelay, 5*time.Second)
	w.MaxRetryDelay = cmp.Or(w.MaxRetryDelay, 6*time.Hour)
	w.DisableAfter = cmp.Or(w.DisableAfter, 5*24*time.Hour)
	w.SecretGrace = cmp.Or(w.SecretGrace, 24*time.Hour)
	a.webhookC = a.deliveryConfig(unbuilt(event.ChannelWebhook), "webhooks", w.DeliveryConfig, []string{"webhook"})
	a.webhookC.MaxRetryDelay = w.MaxRetryDelay
	problems := []error{a.webhookC.Validate()}
	// In the order of the file's keys, so the same file always gives the
	// same message.
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"webhooks.disable_after", w.DisableAfter},
		{"webhooks.max_retry_delay", w.MaxRetryDelay},
		{"webhooks.secret_grace", w.SecretGrace},
	} {
		if d.value < 0 {
			problems = append(problems, fmt.Errorf("%s: must not be negative (got %s)", d.field, d.value))
		}
	}
	// Signing secrets are sealed with the vault's master key.
	problems = append(problems, a.loadKeyring())
	return errors.Join(problems...)
}

// unbuilt stands for a channel's adapter until the service is built: the
// protocol's config is checked by its name alone.
type unbuilt event.Channel

func (u unbuilt) Name() event.Channel { return event.Channel(u) }
func (unbuilt) LongestChain() int     { return 1 }
func (unbuilt) Open(context.Context, jetstream.JetStream) error {
	return errors.New("the channel's adapter is not built")
}
func (unbuilt) Prepare(context.Context, notification.Delivery) (delivery.Try, error) {
	return delivery.Try{}, errors.New("the channel's adapter is not built")
}

// buildWebhook is the webhook channel's delivery workers and the status
// feed that gives them work, as one service.
func (a *App) buildWebhook(ctx context.Context) (service, error) {
	store, err := webhooks.Open(ctx, a.js, a.keyring)
	if err != nil {
		return nil, err
	}
	registry, err := a.tenantCache(ctx)
	if err != nil {
		return nil, err
	}
	w := a.cfg.Webhooks
	logger := a.logger.With("service", "delivery", "channel", "webhook")
	ch, err := webhook.NewChannel(webhook.ChannelConfig{Endpoints: store, DisableAfter: w.DisableAfter, Logger: logger,
		Sender: &webhook.Sender{Client: webhook.NewClient(webhook.ClientOptions{AllowPrivateNetworks: w.AllowPrivateNetworks, Timeout: w.Timeout})}})
	if err != nil {
		return nil, err
	}
	d, err := a.deliveryService(ctx, a.webhookC, ch, registry)
	if err != nil {
		return nil, err
	}
	feed := webhook.NewFeed(a.js, webhook.FeedConfig{Endpoints: store, Logger: a.logger.With("service", "webhook-feed"),
		MeterProvider: a.tel.MeterProvider(), TracerProvider: a.tracer})
	return services{d, feed}, nil
}

// services run as one: started in order, stopped in reverse.
type services []service

func (s services) Start(ctx context.Context) error {
	for i, svc := range s {
		if err := svc.Start(ctx); err != nil {
			_ = services(s[:i]).Stop(ctx)
			return err
		}
	}
	return nil
}

func (s services) Stop(ctx context.Context) error {
	var errs []error
	for i := len(s) - 1; i >= 0; i-- {
		errs = append(errs, s[i].Stop(ctx))
	}
	return errors.Join(errs...)
}
