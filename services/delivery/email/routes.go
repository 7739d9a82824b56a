package email

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// Named is a provider with the name it is known by in receipts, logs,
// metrics and the ledger.
type Named struct {
	Name string
	Provider
}

// Routes says which providers send a tenant's notifications, and as whom.
type Routes interface {
	Route(ctx context.Context, tenant string) (Route, error)
}

// Route is one tenant's provider chain, tried in order within one try, and
// its From header ("" sends as ChannelConfig.From).
type Route struct {
	Providers []Named
	From      string
}

// Accounts are the tenants' own provider accounts (vault.Store).
type Accounts interface {
	Get(ctx context.Context, tenant, name string) (vault.Credential, error)
}

// TenantRoutes routes each tenant through the chain its registry entry
// names. A name is one of the platform's providers (email.providers, by
// type) or one of the tenant's own accounts, decrypted at the moment of use
// and kept built for AccountTTL at most: a changed or removed account is
// used no longer than that. A tenant that names no chain — or is not
// registered — is served by the platform's chain, as its From when it has
// one.
type TenantRoutes struct {
	// Tenants is the registry (tenant.Cache).
	Tenants interface {
		Lookup(id string) (tenant.Tenant, bool)
	}
	// Platform are the platform's providers, by Name.
	Platform []Named
	// Accounts holds the tenants' own accounts.
	Accounts Accounts
	// Build makes a provider of an account.
	Build func(ctx context.Context, c vault.Credential) (Provider, error)
	// AccountTTL is how long a built account is reused. Defaults to 1 minute.
	AccountTTL time.Duration
	// Now defaults to time.Now.
	Now func() time.Time

	mu    sync.Mutex
	built map[string]builtAccount
}

type builtAccount struct {
	provider Provider
	until    time.Time
}

// Route implements Routes. A chain naming an account that does not exist
// is a permanent failure naming it: no retry can succeed before an
// operator fixes the tenant, and the dead letter says what to fix.
func (r *TenantRoutes) Route(ctx context.Context, id string) (Route, error) {
	t, ok := r.Tenants.Lookup(id)
	if !ok || len(t.Providers) == 0 {
		return Route{Providers: r.Platform, From: t.From}, nil
	}
	route := Route{From: t.From}
	for _, name := range t.Providers {
		p, err := r.provider(ctx, id, name)
		if err != nil {
			return Route{}, err
		}
		route.Providers = append(route.Providers, p)
	}
	return route, nil
}

func (r *TenantRoutes) provider(ctx context.Context, tenantID, name string) (Named, error) {
	for _, p := range r.Platform {
		if p.Name == name {
			return p, nil
		}
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	key := vault.BucketKey(tenantID, name)
	r.mu.Lock()
	b, ok := r.built[key]
	r.mu.Unlock()
	if ok && now().Before(b.until) {
		return Named{Name: name, Provider: b.provider}, nil
	}
	if r.Accounts == nil {
		return Named{}, provider.Permanent(fmt.Errorf("tenant %q names provider %q, and no vault is configured", tenantID, name))
	}
	c, err := r.Accounts.Get(ctx, tenantID, name)
	if errors.Is(err, vault.ErrNotFound) {
		return Named{}, provider.Permanent(fmt.Errorf("tenant %q names provider %q, which is neither the platform's nor one of its accounts (herald providers list --tenant %s)", tenantID, name, tenantID))
	}
	if err != nil {
		return Named{}, fmt.Errorf("reading tenant %q's provider %q: %w", tenantID, name, err)
	}
	p, err := r.Build(ctx, c)
	if err != nil {
		return Named{}, provider.Permanent(fmt.Errorf("tenant %q's provider %q: %w", tenantID, name, err))
	}
	r.mu.Lock()
	if r.built == nil {
		r.built = map[string]builtAccount{}
	}
	r.built[key] = builtAccount{provider: p, until: now().Add(cmp.Or(r.AccountTTL, time.Minute))}
	r.mu.Unlock()
	return Named{Name: name, Provider: p}, nil
}
