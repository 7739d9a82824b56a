package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// registersDomains are the email provider types that register sending
// domains (they implement domains.Registrar).
var registersDomains = []string{"ses", "sendgrid"}

// registersPerAccount are those of them that keep one registration of a
// domain for the whole account, whoever asked for it: on the platform's
// account, which every tenant shares, their word proves nothing to the
// tenant asking, and Herald asks its own proof (domains.Shared). SendGrid
// makes each registration its own authenticated domain, with records of
// its own to publish: its word is proof made for the tenant.
var registersPerAccount = []string{"ses"}

// Domains finds the email provider each tenant's sending domains are
// registered with, for the api and `herald domains`: the first provider
// of the tenant's email chain — the platform's (email.providers) unless
// it names its own — that registers domains.
//
// A platform provider is built the first time a domain needs it, not at
// start-up: a process that sends nothing (the api alone) reads its
// credentials only then, and a missing one fails that request, naming the
// setting, rather than the start of a service that does not send.
type Domains struct {
	app *App
	// tenant reads a tenant's registry entry; false if it has none.
	tenant   func(ctx context.Context, id string) (tenant.Tenant, bool, error)
	accounts delivery.Accounts

	mu    sync.Mutex
	built map[int]domains.Registrar // the platform's, by index in email.providers
}

// OpenDomains is Domains for a command-line tool: the registry and the
// tenants' accounts are read at each call, the accounts opened with the
// configured master key (vault:), if any.
func OpenDomains(ctx context.Context, cfg Config, js jetstream.JetStream) (*Domains, error) {
	a := &App{cfg: cfg.WithDefaults(), js: js, logger: slog.New(slog.DiscardHandler)}
	if err := a.loadKeyring(); err != nil {
		return nil, err
	}
	registry, err := tenant.Open(ctx, js, a.cfg.Plans)
	if err != nil {
		return nil, err
	}
	accounts, err := a.accounts(ctx)
	if err != nil {
		return nil, err
	}
	return &Domains{app: a, accounts: accounts, tenant: func(ctx context.Context, id string) (tenant.Tenant, bool, error) {
		t, err := registry.Get(ctx, id)
		if errors.Is(err, tenant.ErrNotFound) {
			return tenant.Tenant{}, false, nil
		}
		return t, err == nil, err
	}}, nil
}

// domains is Domains for this process's api, reading tenants from the
// watched registry.
func (a *App) domains(registry *tenant.Cache, accounts delivery.Accounts) *Domains {
	return &Domains{app: a, accounts: accounts, tenant: func(_ context.Context, id string) (tenant.Tenant, bool, error) {
		t, ok := registry.Lookup(id)
		return t, ok, nil
	}}
}

// Registrar is the provider that registers the tenant's sending domains,
// with its name in the tenant's chain; domains.ErrNoRegistrar if none of
// the chain does.
func (d *Domains) Registrar(ctx context.Context, id string) (string, domains.Registrar, error) {
	t, registered, err := d.tenant(ctx, id)
	if err != nil {
		return "", nil, err
	}
	platform := d.app.emailProviders()
	chain := t.Chain(event.ChannelEmail)
	if !registered || len(chain) == 0 {
		for _, p := range platform {
			chain = append(chain, p.Type)
		}
	}
	for _, name := range chain {
		var r domains.Registrar
		if i := slices.IndexFunc(platform, func(p ProviderConfig) bool { return p.Type == name }); i >= 0 {
			r, err = d.platform(ctx, i)
		} else {
			r, err = d.account(ctx, id, name)
		}
		if err != nil || r != nil {
			return name, r, err
		}
	}
	return "", nil, domains.ErrNoRegistrar
}

// platform is the platform's provider at index i of email.providers, if
// it registers domains, as every tenant shares it (App.shared); built once.
func (d *Domains) platform(ctx context.Context, i int) (domains.Registrar, error) {
	p := d.app.emailProviders()[i]
	if !slices.Contains(registersDomains, p.Type) {
		return nil, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.built[i]; ok {
		return r, nil
	}
	built, err := d.app.buildProvider(ctx, fmt.Sprintf("email.providers[%d]", i), p)
	if err != nil {
		return nil, err
	}
	r, ok := built.(domains.Registrar)
	if !ok {
		return nil, fmt.Errorf("email.providers[%d]: a %s provider that does not register domains", i, p.Type)
	}
	if d.built == nil {
		d.built = map[int]domains.Registrar{}
	}
	d.built[i] = d.app.shared(r, p.Type)
	return d.built[i], nil
}

// shared is r, a platform provider of type kind, as every tenant shares
// it: behind Herald's own proof when the provider's registration is the
// account's (registersPerAccount).
func (a *App) shared(r domains.Registrar, kind string) domains.Registrar {
	if !slices.Contains(registersPerAccount, kind) {
		return r
	}
	sh := domains.Shared{Registrar: r}
	if addr := a.cfg.Email.DNSResolver; addr != "" {
		sh.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
	}
	return sh
}

// account is the tenant's own account name, if it registers domains; as
// the delivery workers do, a chain naming an account that is not there is
// an error naming it.
func (d *Domains) account(ctx context.Context, id, name string) (domains.Registrar, error) {
	if d.accounts == nil {
		return nil, fmt.Errorf("tenant %q names email provider %q, and no vault is configured (vault.master_key_env)", id, name)
	}
	c, err := d.accounts.Get(ctx, id, name)
	if errors.Is(err, vault.ErrNotFound) {
		return nil, fmt.Errorf("tenant %q names email provider %q, which is neither the platform's nor one of its accounts (herald providers list --tenant %s)", id, name, id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading tenant %q's provider %q: %w", id, name, err)
	}
	if !slices.Contains(registersDomains, c.Type) {
		return nil, nil
	}
	built, err := buildAccount(ctx, id, c)
	if err != nil {
		return nil, fmt.Errorf("tenant %q's provider %q: %w", id, name, err)
	}
	r, ok := built.(domains.Registrar)
	if !ok {
		return nil, fmt.Errorf("tenant %q's provider %q: a %s account that does not register domains", id, name, c.Type)
	}
	return r, nil
}

// emailProviders is the platform's email chain as configured, or the
// default one.
func (a *App) emailProviders() []ProviderConfig {
	if len(a.cfg.Email.Providers) == 0 {
		return defaultProviders
	}
	return a.cfg.Email.Providers
}
