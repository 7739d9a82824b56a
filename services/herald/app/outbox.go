package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/shared/redact"
)

// configureOutbox reads outbox: — the URL's form and the relay's limits
// are checked here; the database is reached only when the service starts.
func (a *App) configureOutbox() error {
	c := a.cfg.Outbox
	if c.URL == "" {
		return errors.New("outbox.url: the outbox-relay service needs the outbox's database: postgres://… or sqlite:PATH (or OUTBOX_URL, or --postgres)")
	}
	if err := outbox.CheckURL(c.URL); err != nil {
		return fmt.Errorf("outbox.url: %q: %w", redact.URL(c.URL), err)
	}
	return a.relayConfig().WithDefaults().Validate()
}

func (a *App) relayConfig() outbox.RelayConfig {
	c := a.cfg.Outbox
	return outbox.RelayConfig{Batch: c.Batch, Poll: c.Poll, Retention: c.Retention,
		Logger: a.logger.With("service", "outbox-relay"), MeterProvider: a.tel.MeterProvider()}
}

// buildOutbox opens the outbox's database; the process is unready while
// it does not answer.
func (a *App) buildOutbox(ctx context.Context) (service, error) {
	db, err := outbox.Open(ctx, a.cfg.Outbox.URL)
	if err != nil {
		return nil, fmt.Errorf("outbox.url: %w", err)
	}
	if _, err := db.Status(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("outbox.url: %s: reading herald_outbox (herald outbox init creates it): %w", redact.URL(a.cfg.Outbox.URL), err)
	}
	a.checks.Add("outbox", db.Ping)
	r, err := outbox.NewRelay(db, a.js, a.relayConfig())
	if err != nil {
		db.Close()
		return nil, err
	}
	return closing{r, db.Close}, nil
}

// closing is a service that releases something once stopped.
type closing struct {
	service
	release func()
}

func (c closing) Stop(ctx context.Context) error {
	err := c.service.Stop(ctx)
	c.release()
	return err
}
