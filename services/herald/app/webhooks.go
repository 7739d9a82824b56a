package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/webhook"
	"github.com/heraldhq/herald/shared/webhooks"
)

// configureWebhook reads webhooks:. The adapter needs the endpoint
// registry, which needs NATS: it is built with the service.
func (a *App) configureWebhook() error {
	w := &a.cfg.Webhooks
	w.MaxTries = cmp.Or(w.MaxTries, 15)
	w.RetryDelay = cmp.Or(w.RetryDelay, 5*time.Second)
	w.MaxRetryDelay = cmp.Or(w.MaxRetryDelay, 6*time.Hour)
	w.DisableAfter = cmp.Or(w.DisableAfter, 5*24*time.Hour)
	w.SecretGrace = cmp.Or(w.SecretGrace, 24*time.Hour)
	var problems []error
	for field, d := range map[string]time.Duration{"webhooks.max_retry_delay": w.MaxRetryDelay,
		"webhooks.disable_after": w.DisableAfter, "webhooks.secret_grace": w.SecretGrace} {
		if d < 0 {
			problems = append(problems, fmt.Errorf("%s: must not be negative (got %s)", field, d))
		}
	}
	if err := errors.Join(problems...); err != nil {
		return err
	}
	// Signing secrets are sealed with the vault's master key.
	return a.loadKeyring()
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
	c := a.deliveryConfig(ch, w.DeliveryConfig, []string{"webhook"})
	c.MaxRetryDelay, c.Registry = w.MaxRetryDelay, registry
	if err := c.Validate(); err != nil {
		return nil, err
	}
	d, err := delivery.New(a.js, c)
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
