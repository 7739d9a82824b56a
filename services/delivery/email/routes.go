package email

import (
	"context"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// Named is a provider with the name it is known by in receipts, logs,
// metrics and the ledger.
type Named = delivery.Named[Provider]

// Routes says which providers send a tenant's notifications, and as whom.
type Routes interface {
	Route(ctx context.Context, tenant string) (Route, error)
}

// Route is one tenant's provider chain, tried in order within one try, and
// its From header ("" sends as ChannelConfig.From).
type Route struct {
	Providers []Named
	From      string
	// Brand is the tenant's, for the HTML part: its name, logo and colour.
	Brand Brand
}

// TenantRoutes routes each tenant through its own email chain
// (delivery.TenantChains of the email channel), as its From when it has
// one.
type TenantRoutes struct {
	chains *delivery.TenantChains[Provider]
}

// NewTenantRoutes routes tenants in the registry through the platform's
// providers and their own accounts, which build makes providers of.
func NewTenantRoutes(tenants interface {
	Lookup(id string) (tenant.Tenant, bool)
}, platform []Named, accounts delivery.Accounts, build func(ctx context.Context, tenant string, c vault.Credential) (Provider, error)) *TenantRoutes {
	return &TenantRoutes{chains: &delivery.TenantChains[Provider]{
		Channel: event.ChannelEmail, Tenants: tenants, Platform: platform, Accounts: accounts, Build: build}}
}

// Route implements Routes.
func (r *TenantRoutes) Route(ctx context.Context, id string) (Route, error) {
	providers, err := r.chains.Chain(ctx, id)
	if err != nil {
		return Route{}, err
	}
	t, _ := r.chains.Tenants.Lookup(id)
	return Route{Providers: providers, From: t.From, Brand: Brand{Name: t.Name, LogoURL: t.LogoURL, Colour: t.Colour}}, nil
}
