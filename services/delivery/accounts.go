package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// Named is a channel's provider with the name it is known by in receipts,
// logs, metrics and the ledger.
type Named[P any] struct {
	Name     string
	Provider P
	// Owner is the tenant whose own account this is; "" for the
	// platform's providers.
	Owner string
}

// Breaker keys the provider's circuit breaker: a tenant's account is its
// own, so one tenant's dead account trips no other's. Account names are
// the tenant's to choose, so they are qualified by the tenant.
func (n Named[P]) Breaker() string {
	if n.Owner == "" {
		return n.Name
	}
	return n.Owner + "/" + n.Name
}

// Accounts are the tenants' own provider accounts (vault.Store).
type Accounts interface {
	Get(ctx context.Context, tenant, name string) (vault.Credential, error)
}

// TenantChains picks each tenant's provider chain on one channel: the
// chain its registry entry names for the channel (tenant.Tenant.Chain), of
// the platform's providers (by name) and its own accounts, decrypted at
// the moment of use and kept built for AccountTTL at most — a changed or
// removed account is used no longer than that. A tenant that names no
// chain, or is not registered, is served by the platform's.
type TenantChains[P any] struct {
	// Channel is the channel whose chains these are. Required.
	Channel event.Channel
	// Tenants is the registry (tenant.Cache). Required.
	Tenants interface {
		Lookup(id string) (tenant.Tenant, bool)
	}
	// Platform are the platform's providers, by Name.
	Platform []Named[P]
	// Accounts holds the tenants' own accounts. Without it, a chain naming
	// an account fails.
	Accounts Accounts
	// Build makes a provider of tenant's account, of a type the channel
	// takes.
	Build func(ctx context.Context, tenant string, c vault.Credential) (P, error)
	// AccountTTL is how long a built account is reused. Defaults to 1 minute.
	AccountTTL time.Duration
	// Now defaults to time.Now.
	Now func() time.Time

	mu    sync.Mutex
	built map[string]builtAccount[P]
}

type builtAccount[P any] struct {
	provider P
	until    time.Time
}

// Chain is the tenant's chain. One naming an account that does not exist,
// or one for another channel, is a permanent failure naming it: no retry
// can succeed before an operator fixes the tenant, and the dead letter
// says what to fix.
func (r *TenantChains[P]) Chain(ctx context.Context, id string) ([]Named[P], error) {
	t, ok := r.Tenants.Lookup(id)
	names := t.Chain(r.Channel)
	if !ok || len(names) == 0 {
		return r.Platform, nil
	}
	chain := make([]Named[P], 0, len(names))
	for _, name := range names {
		p, err := r.provider(ctx, id, name)
		if err != nil {
			return nil, err
		}
		chain = append(chain, p)
	}
	return chain, nil
}

func (r *TenantChains[P]) provider(ctx context.Context, tenantID, name string) (Named[P], error) {
	if i := slices.IndexFunc(r.Platform, func(p Named[P]) bool { return p.Name == name }); i >= 0 {
		return r.Platform[i], nil
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
		return Named[P]{Name: name, Provider: b.provider, Owner: tenantID}, nil
	}
	if r.Accounts == nil {
		return Named[P]{}, provider.Permanent(fmt.Errorf("tenant %q names %s provider %q, and no vault is configured", tenantID, r.Channel, name))
	}
	c, err := r.Accounts.Get(ctx, tenantID, name)
	if errors.Is(err, vault.ErrNotFound) {
		return Named[P]{}, provider.Permanent(fmt.Errorf("tenant %q names %s provider %q, which is neither the platform's nor one of its accounts (herald providers list --tenant %s)", tenantID, r.Channel, name, tenantID))
	}
	if err != nil {
		return Named[P]{}, fmt.Errorf("reading tenant %q's provider %q: %w", tenantID, name, err)
	}
	if !slices.Contains(vault.ChannelsOf(c.Type), r.Channel) {
		return Named[P]{}, provider.Permanent(fmt.Errorf("tenant %q names provider %q in its %s chain, and it is a %s account, which sends %v", tenantID, name, r.Channel, c.Type, vault.ChannelsOf(c.Type)))
	}
	p, err := r.Build(ctx, tenantID, c)
	if err != nil {
		return Named[P]{}, provider.Permanent(fmt.Errorf("tenant %q's provider %q: %w", tenantID, name, err))
	}
	r.mu.Lock()
	if r.built == nil {
		r.built = map[string]builtAccount[P]{}
	}
	r.built[key] = builtAccount[P]{provider: p, until: now().Add(cmp.Or(r.AccountTTL, time.Minute))}
	r.mu.Unlock()
	return Named[P]{Name: name, Provider: p, Owner: tenantID}, nil
}
