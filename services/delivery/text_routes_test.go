package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/services/delivery/sms/textdir"
	"github.com/heraldhq/herald/services/delivery/sms/twilio"
	"github.com/heraldhq/herald/services/delivery/sms/twilio/twiliotest"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// A tenant's SMS go through the chain it names for SMS: acme's through its
// own Twilio account — the auth token decrypted from the vault is the one
// the fake Twilio accepts — globex's through the platform's sink; initech
// names an email account in its SMS chain and is dead-lettered saying so.
// No secret is logged.
func TestEachTenantTextsThroughItsOwnSMSChain(t *testing.T) {
	t.Parallel()
	const (
		acmeSID   = "AC11111111111111111111111111111111"
		acmeToken = "acmeOwnTwilioAuthToken0000000000"
	)
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	cache, accounts := tenantsWithVault(t, n.JS, []tenant.Tenant{
		{ID: "acme", Plan: "startup", Providers: []string{"acme-ses"}, SMSProviders: []string{"acme-twilio", "textdir"}},
		{ID: "globex", Plan: "startup"},
		{ID: "initech", Plan: "startup", SMSProviders: []string{"acme-ses"}},
	}...)
	fake := twiliotest.New(t, acmeSID, acmeToken)
	require.NoError(t, accounts.Put(ctx, "acme", vault.Credential{Name: "acme-twilio", Type: vault.TypeTwilio,
		AccountSID: acmeSID, AuthToken: vault.NewSecret(acmeToken), From: "+15005550006", Endpoint: fake.URL()}))
	for _, id := range []string{"acme", "initech"} {
		require.NoError(t, accounts.Put(ctx, id, vault.Credential{Name: "acme-ses", Type: vault.TypeSES, Region: "eu-west-1",
			AccessKeyID: vault.NewSecret("AKIDEXAMPLE"), SecretAccessKey: vault.NewSecret("ses-secret-access-key-0000")}))
	}

	sink, err := textdir.New(t.TempDir())
	require.NoError(t, err)
	platform := []sms.Named{{Name: textdir.Name, Provider: sink}}
	ch, err := sms.NewChannel(sms.ChannelConfig{Channel: event.ChannelSMS, Providers: platform,
		Chains: &delivery.TenantChains[sms.Provider]{Channel: event.ChannelSMS, Tenants: cache, Platform: platform, Accounts: accounts,
			Build: func(_ context.Context, _ string, c vault.Credential) (sms.Provider, error) {
				return twilio.New(twilio.Config{AccountSID: c.AccountSID, AuthToken: c.AuthToken.Reveal(), From: c.From, Endpoint: c.Endpoint})
			}}})
	require.NoError(t, err)
	var logs bytes.Buffer
	svc, err := delivery.New(n.JS, delivery.Config{Channel: ch, Registry: cache, Locker: heraldtest.Locker(t), Concurrency: 1,
		RetryDelay: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	for i, id := range []string{"acme", "globex", "initech"} {
		publishText(t, n.JS, id, "+3460011122"+string(rune('0'+i)))
	}
	require.Eventually(t, func() bool {
		written, err := textdir.Read(sink.Dir())
		require.NoError(t, err)
		return len(fake.Received()) == 1 && len(written) == 1 && len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == 1
	}, 60*time.Second, 20*time.Millisecond)

	acme := fake.Received()[0]
	require.Equal(t, "+34600111220", acme.To)
	require.Equal(t, "+15005550006", acme.From, "acme's own sender")
	written, err := textdir.Read(sink.Dir())
	require.NoError(t, err)
	require.Equal(t, "+34600111221", written[0].To, "globex through the platform's chain")
	entries, err := ledger.Open(ctx, n.JS)
	require.NoError(t, err)
	entry, err := entries.Get(ctx, "acme", textKey("acme", "+34600111220"))
	require.NoError(t, err)
	require.Equal(t, "acme-twilio", entry.Provider, "the receipt names the tenant's account")
	dlq := heraldtest.StreamMessages(t, n.JS, "DLQ")[0]
	require.Contains(t, dlq.Header.Get(deadletter.HeaderReason),
		`tenant "initech" names provider "acme-ses" in its sms chain, and it is a ses account, which sends [email]`)
	require.NotContains(t, logs.String(), acmeToken)
}

func textKey(tenant, number string) string {
	return notification.Key{Tenant: tenant, Subject: "evt_1", Document: "low_stock", Channel: event.ChannelSMS, Recipient: number}.String()
}

func publishText(t *testing.T, js jetstream.JetStream, tenant, number string) {
	t.Helper()
	publishTextOn(t, js, "notify.sms.normal."+tenant, tenant, number)
}

// publishTextOn publishes tenant's SMS to number on subject.
func publishTextOn(t *testing.T, js jetstream.JetStream, subject, tenant, number string) {
	t.Helper()
	key := textKey(tenant, number)
	d := notification.Delivery{
		ID: notification.ID(key), DedupeKey: key, Tenant: tenant, Channel: event.ChannelSMS, Priority: notification.PriorityNormal,
		Recipient: notification.Recipient{Address: number}, Template: "low_stock", Locale: "en",
		Stock: &event.Stock{SKU: "MILK-1L", Description: "Whole milk 1 L", Warehouse: "SEV-01", OnHand: "14", ReorderPoint: "50", Unit: "pcs"},
	}
	body, err := json.Marshal(d)
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, key)
	_, err = js.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}
