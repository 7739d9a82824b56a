package delivery_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

type tenantMap map[string]tenant.Tenant

func (m tenantMap) Lookup(id string) (tenant.Tenant, bool) { t, ok := m[id]; return t, ok }

type accountMap map[string]vault.Credential

func (m accountMap) Get(_ context.Context, tenant, name string) (vault.Credential, error) {
	c, ok := m[vault.BucketKey(tenant, name)]
	if !ok {
		return vault.Credential{}, vault.ErrNotFound
	}
	return c, nil
}

// Each channel reads the tenant's chain for that channel: its SMS chain
// names the platform's provider by name and its own Twilio account, which
// is built once per AccountTTL and has its own breaker; an account of
// another channel's type, or one it does not have, is a permanent failure
// saying so.
func TestTenantChainsPickTheChannelsChain(t *testing.T) {
	t.Parallel()
	tenants := tenantMap{
		"acme":     {ID: "acme", Providers: []string{"acme-ses"}, SMSProviders: []string{"acme-twilio", "awssms"}},
		"globex":   {ID: "globex"},
		"initech":  {ID: "initech", SMSProviders: []string{"acme-ses"}},
		"umbrella": {ID: "umbrella", WhatsAppProviders: []string{"missing"}},
	}
	accounts := accountMap{
		vault.BucketKey("acme", "acme-twilio"): {Name: "acme-twilio", Type: vault.TypeTwilio},
		vault.BucketKey("acme", "acme-ses"):    {Name: "acme-ses", Type: vault.TypeSES},
		vault.BucketKey("initech", "acme-ses"): {Name: "acme-ses", Type: vault.TypeSES},
	}
	var builds atomic.Int32
	now := time.Unix(1_800_000_000, 0)
	chains := func(channel event.Channel) *delivery.TenantChains[string] {
		return &delivery.TenantChains[string]{Channel: channel, Tenants: tenants, Accounts: accounts,
			Platform: []delivery.Named[string]{{Name: "twilio", Provider: "platform twilio"}, {Name: "awssms", Provider: "platform awssms"}},
			Build: func(_ context.Context, _ string, c vault.Credential) (string, error) {
				builds.Add(1)
				return "built " + c.Name, nil
			},
			AccountTTL: time.Minute, Now: func() time.Time { return now }}
	}
	ctx := context.Background()
	sms := chains(event.ChannelSMS)

	got, err := sms.Chain(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []delivery.Named[string]{
		{Name: "acme-twilio", Provider: "built acme-twilio", Owner: "acme"},
		{Name: "awssms", Provider: "platform awssms"},
	}, got)
	require.Equal(t, "acme/acme-twilio", got[0].Breaker(), "a tenant's account trips only its own breaker")
	require.Equal(t, "awssms", got[1].Breaker())

	_, err = sms.Chain(ctx, "acme")
	require.NoError(t, err)
	require.EqualValues(t, 1, builds.Load(), "built once within AccountTTL")
	now = now.Add(2 * time.Minute)
	_, err = sms.Chain(ctx, "acme")
	require.NoError(t, err)
	require.EqualValues(t, 2, builds.Load(), "rebuilt after AccountTTL: a changed account is read again")

	got, err = sms.Chain(ctx, "globex")
	require.NoError(t, err)
	require.Len(t, got, 2, "no chain of its own: the platform's")
	got, err = sms.Chain(ctx, "unregistered")
	require.NoError(t, err)
	require.Len(t, got, 2)

	_, err = sms.Chain(ctx, "initech")
	require.True(t, provider.IsPermanent(err))
	require.ErrorContains(t, err, `tenant "initech" names provider "acme-ses" in its sms chain, and it is a ses account, which sends [email]`)

	_, err = chains(event.ChannelWhatsApp).Chain(ctx, "umbrella")
	require.True(t, provider.IsPermanent(err))
	require.ErrorContains(t, err, `tenant "umbrella" names whatsapp provider "missing", which is neither the platform's nor one of its accounts`)

	noVault := chains(event.ChannelSMS)
	noVault.Accounts = nil
	_, err = noVault.Chain(ctx, "acme")
	require.True(t, provider.IsPermanent(err))
	require.ErrorContains(t, err, "no vault is configured")

	// A vault that cannot be read now may be readable on the next try.
	broken := chains(event.ChannelSMS)
	broken.Accounts = failingAccounts{}
	_, err = broken.Chain(ctx, "acme")
	require.Error(t, err)
	require.False(t, provider.IsPermanent(err))
}

type failingAccounts struct{}

func (failingAccounts) Get(context.Context, string, string) (vault.Credential, error) {
	return vault.Credential{}, errors.New("nats: timeout")
}
