package app

import (
	"context"
	"errors"
	"fmt"

	svchistory "github.com/heraldhq/herald/services/history"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/redact"
)

// configureHistory reads history: — the index's URL, whose form is
// checked here and whose server is reached only when the service starts.
func (a *App) configureHistory() error {
	if a.cfg.History.URL == "" {
		return errors.New("history.url: the history service needs the notification index: postgres://… or sqlite:PATH (or HISTORY_URL)")
	}
	return checkHistoryURL(a.cfg.History.URL)
}

func checkHistoryURL(url string) error {
	if err := history.CheckURL(url); err != nil {
		return fmt.Errorf("history.url: %q: %w", redact.URL(url), err)
	}
	return nil
}

// buildHistory opens the index and keeps it filled from the ledger.
func (a *App) buildHistory(ctx context.Context) (service, error) {
	store, err := a.historyStore(ctx)
	if err != nil {
		return nil, err
	}
	// Only the history service is unready without its database: the api
	// answers listings with 503 then, and everything else as before.
	a.checks.Add("history", store.Ping)
	// The retention sweep removes each tenant's rows and documents by its
	// own retention, read from the registry.
	registry, err := a.tenantCache(ctx)
	if err != nil {
		return nil, err
	}
	return svchistory.New(a.js, svchistory.Config{Store: store, Retention: a.cfg.Ledger.Retention, Registry: registry,
		Tenants: a.tenants, Logger: a.logger.With("service", "history"), MeterProvider: a.tel.MeterProvider()})
}

// historyStore is the process's connection to the index, opened by the
// first service that needs it.
func (a *App) historyStore(ctx context.Context) (*history.Store, error) {
	if a.history == nil {
		store, err := history.Open(ctx, a.cfg.History.URL)
		if err != nil {
			return nil, fmt.Errorf("history.url: %w", err)
		}
		a.history = store
	}
	return a.history, nil
}
