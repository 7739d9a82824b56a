package delivery_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/maildir"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// Each tenant's notifications go through the chain its registry entry
// names, as its From: acme's through its own SendGrid account — the key
// decrypted from the vault is the one SendGrid accepts — globex's, which
// names none, through the platform's provider; initech names an account it
// does not have and is dead-lettered saying which. No secret is logged.
func TestEachTenantSendsThroughItsOwnChain(t *testing.T) {
	t.Parallel()
	const acmeKey = "SG.acme-own-account-key"
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	cache, accounts := tenantsWithVault(t, n.JS, []tenant.Tenant{
		{ID: "acme", Name: "Acme Logistics", Plan: "startup", From: "Acme Orders <orders@acme.example>", Providers: []string{"sendgrid-acme", "maildir"},
			LogoURL: "https://acme.example/logo.png", Colour: "#b22222"},
		{ID: "globex", Plan: "startup"},
		{ID: "initech", Plan: "startup", Providers: []string{"missing"}},
	}...)
	sg := sendgridtest.New(t, acmeKey)
	require.NoError(t, accounts.Put(ctx, "acme", vault.Credential{Name: "sendgrid-acme", Type: vault.TypeSendGrid,
		Endpoint: sg.URL(), APIKey: vault.NewSecret(acmeKey)}))
	// Its From's domain is verified at SendGrid: else nothing is sent from it.
	verified, err := domains.Open(ctx, n.JS)
	require.NoError(t, err)
	_, err = verified.Put(ctx, domains.Entry{Tenant: "acme", Domain: "acme.example", Provider: "sendgrid-acme", Status: domains.Verified})
	require.NoError(t, err)

	mailDir := t.TempDir()
	sink, err := maildir.New(mailDir)
	require.NoError(t, err)
	platform := []email.Named{{Name: "maildir", Provider: sink}}
	var logs bytes.Buffer
	svc, err := newEmail(t, n.JS, config{ChannelConfig: email.ChannelConfig{From: "Herald <herald@platform.example>", Providers: platform, Routes: email.NewTenantRoutes(cache, platform, accounts,
		func(_ context.Context, _ string, c vault.Credential) (email.Provider, error) {
			return sendgrid.New(sendgrid.Config{APIKey: c.APIKey.Reveal(), Endpoint: c.Endpoint})
		})}, Config: delivery.Config{Locker: heraldtest.Locker(t), Concurrency: 1, RetryDelay: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	doc := notification.Document{Type: notification.PurchaseOrder}
	publishDelivery(t, n.JS, "notify.email.normal.acme", "acme", "olga@zarya.example", doc, 0)
	publishDelivery(t, n.JS, "notify.email.normal.globex", "globex", "ops@globex.example", doc, 1)
	publishDelivery(t, n.JS, "notify.email.normal.initech", "initech", "bill@initech.example", doc, 2)

	mails := func() []string {
		files, err := filepath.Glob(filepath.Join(mailDir, "*.eml"))
		require.NoError(t, err)
		return files
	}
	require.Eventually(t, func() bool {
		return len(sg.Received()) == 1 && len(mails()) == 1 && len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == 1
	}, 60*time.Second, 20*time.Millisecond)

	acme := sg.Received()[0]
	require.Equal(t, "olga@zarya.example", acme.To)
	require.Equal(t, "orders@acme.example", acme.From, "acme's own From")
	require.Contains(t, acme.HTML, `src="https://acme.example/logo.png"`, "acme's own brand")
	require.Contains(t, acme.HTML, "#b22222")
	raw, err := os.ReadFile(mails()[0])
	require.NoError(t, err)
	require.Contains(t, string(raw), "To: <ops@globex.example>", "globex through the platform's chain")
	require.Contains(t, string(raw), "herald@platform.example")
	dlq := heraldtest.StreamMessages(t, n.JS, "DLQ")[0]
	require.Contains(t, dlq.Header.Get(deadletter.HeaderReason),
		`tenant "initech" names email provider "missing", which is neither the platform's nor one of its accounts`)
	require.NotContains(t, logs.String(), acmeKey)
}

// tenantsWithVault registers tenants and opens a vault under a new master
// key: what a tenant's own chain reads.
func tenantsWithVault(t *testing.T, js jetstream.JetStream, tenants ...tenant.Tenant) (*tenant.Cache, *vault.Store) {
	t.Helper()
	ctx := heraldtest.Context(t)
	reg, err := tenant.Open(ctx, js, tenant.BuiltinPlans())
	require.NoError(t, err)
	for _, tt := range tenants {
		_, err := reg.Create(ctx, tt)
		require.NoError(t, err)
	}
	cache, err := tenant.Watch(ctx, js)
	require.NoError(t, err)
	t.Cleanup(cache.Stop)
	key, err := vault.GenerateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	keyring, err := vault.NewKeyring(key)
	require.NoError(t, err)
	accounts, err := vault.Open(ctx, js, keyring)
	require.NoError(t, err)
	return cache, accounts
}
