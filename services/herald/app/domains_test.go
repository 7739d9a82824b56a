package app_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// A tenant's domains are registered with the first provider of its email
// chain that registers domains: the platform's, past one that does not,
// or the tenant's own account — never a provider its email does not go
// through.
func TestSendingDomainsGoToTheTenantsFirstProviderThatRegistersThem(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	platformSG, acmeSES := sendgridtest.New(t, "SG.platform-key"), sestest.New(t)

	masterKey := filepath.Join(t.TempDir(), "master.key")
	_, err := vault.GenerateKeyFile(masterKey)
	require.NoError(t, err)
	keyring, err := vault.LoadKeyring(vault.Config{MasterKeyFile: masterKey}, func(string) string { return "" })
	require.NoError(t, err)
	accounts, err := vault.Open(ctx, n.JS, keyring)
	require.NoError(t, err)
	require.NoError(t, accounts.Put(ctx, "acme", vault.Credential{Name: "acme-ses", Type: "ses", Region: "eu-west-1", Endpoint: acmeSES.URL(),
		AccessKeyID: vault.NewSecret("AKIDACME"), SecretAccessKey: vault.NewSecret("acme-secret")}))
	registry, err := tenant.Open(ctx, n.JS, tenant.BuiltinPlans())
	require.NoError(t, err)
	for _, tn := range []tenant.Tenant{
		{ID: "acme", Plan: "enterprise", Providers: []string{"maildir", "acme-ses", "sendgrid"}},
		{ID: "initech", Plan: "enterprise", Providers: []string{"maildir"}},
		{ID: "umbrella", Plan: "enterprise", Providers: []string{"umbrella-ses"}},
	} {
		_, err := registry.Create(ctx, tn)
		require.NoError(t, err)
	}

	var cfg app.Config
	cfg.Email.Providers = []app.ProviderConfig{{Type: "maildir", Dir: t.TempDir()}, {Type: "sendgrid", Endpoint: platformSG.URL()}}
	cfg.Vault.MasterKeyFile = masterKey
	cfg.Getenv = func(k string) string { return map[string]string{"SENDGRID_API_KEY": "SG.platform-key"}[k] }
	d, err := app.OpenDomains(ctx, cfg, n.JS)
	require.NoError(t, err)

	name, r, err := d.Registrar(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, "acme-ses", name, "its own account, before the platform's sendgrid")
	_, err = r.RegisterDomain(ctx, "acme.example")
	require.NoError(t, err)
	require.Len(t, acmeSES.DKIMTokens("acme.example"), 3)

	name, r, err = d.Registrar(ctx, "globex")
	require.NoError(t, err)
	require.Equal(t, "sendgrid", name, "not registered: the platform's chain, past maildir")
	_, err = r.RegisterDomain(ctx, "globex.example")
	require.NoError(t, err)
	require.Len(t, platformSG.Domains(), 1)

	_, _, err = d.Registrar(ctx, "initech")
	require.ErrorIs(t, err, domains.ErrNoRegistrar)
	_, _, err = d.Registrar(ctx, "umbrella")
	require.ErrorContains(t, err, `tenant "umbrella" names email provider "umbrella-ses", which is neither the platform's nor one of its accounts`)

	// The platform's credentials are read when a domain needs them, and
	// their absence is told naming the setting.
	cfg.Getenv = func(string) string { return "" }
	d, err = app.OpenDomains(ctx, cfg, n.JS)
	require.NoError(t, err)
	_, _, err = d.Registrar(ctx, "globex")
	require.ErrorContains(t, err, "email.providers[1].api_key_env: the environment variable SENDGRID_API_KEY is not set")
}
