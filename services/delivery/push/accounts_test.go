package push_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/apns"
	"github.com/heraldhq/herald/services/delivery/push/apns/apnstest"
	"github.com/heraldhq/herald/services/delivery/push/fcm"
	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/vault"
)

// tenantAccounts is the vault, on a real bucket, and a clock the test
// moves; build makes senders of the accounts as the app does, each
// trusting the fake its endpoint names.
type tenantAccounts struct {
	store  *vault.Store
	now    atomic.Pointer[time.Time]
	builds atomic.Int32

	mu         sync.Mutex
	transports map[string]http.RoundTripper // by endpoint
}

func newTenantAccounts(t *testing.T) *tenantAccounts {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	key, err := vault.ParseKey([]byte(rand.Text() + rand.Text())[:32])
	require.NoError(t, err)
	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	store, err := vault.Open(heraldtest.Context(t), n.JS, keys)
	require.NoError(t, err)
	a := &tenantAccounts{store: store, transports: map[string]http.RoundTripper{}}
	now := time.Now()
	a.now.Store(&now)
	return a
}

// apnsAccount stores tenant's own APNs account, its own fake behind it.
func (a *tenantAccounts) apnsAccount(t *testing.T, tenant, name string) *apnstest.Server {
	t.Helper()
	p8, key := apnstest.NewKey(t)
	fake := apnstest.NewServer(t, apnstest.Account{KeyID: "TENANTKEY1", TeamID: "TENANTTEAM", Key: &key.PublicKey, Topic: "com.globex.app"})
	a.mu.Lock()
	a.transports[fake.URL] = fake.Client().Transport
	a.mu.Unlock()
	require.NoError(t, a.store.Put(heraldtest.Context(t), tenant, vault.Credential{Name: name, Type: vault.TypeAPNs,
		AuthKey: vault.NewSecret(p8), APNsKeyID: "TENANTKEY1", TeamID: "TENANTTEAM", Topic: "com.globex.app", Endpoint: fake.URL}))
	return fake
}

func (a *tenantAccounts) build(ctx context.Context, _ string, c vault.Credential) (push.Sender, error) {
	a.builds.Add(1)
	switch c.Type {
	case vault.TypeAPNs:
		a.mu.Lock()
		transport := a.transports[c.Endpoint]
		a.mu.Unlock()
		return apns.New(apns.Config{KeyID: c.APNsKeyID, TeamID: c.TeamID, AuthKey: c.AuthKey.Reveal(), Topic: c.Topic,
			Host: c.Endpoint, Transport: transport})
	case vault.TypeFCM:
		return fcm.New(ctx, fcm.Config{CredentialsJSON: []byte(c.ServiceAccount.Reveal()), Endpoint: c.Endpoint})
	}
	return nil, errors.New("not a type this test builds")
}

func (a *tenantAccounts) tick(d time.Duration) {
	now := a.now.Load().Add(d)
	a.now.Store(&now)
}

// channel is the bundle's channel with the tenants' accounts over the
// platform's providers.
func (b *testBundle) channelWithAccounts(t *testing.T, a *tenantAccounts, list ...recipient.Device) *push.Channel {
	t.Helper()
	b.directory = newDevices(list...)
	c, err := push.NewChannel(push.ChannelConfig{Devices: b.directory, Senders: b.senders,
		Accounts: &push.TenantSenders{Accounts: a.store, Build: a.build, Now: func() time.Time { return *a.now.Load() }}})
	require.NoError(t, err)
	return c
}

func ofTenant(tenant string, d recipient.Device) recipient.Device {
	d.Tenant = tenant
	return d
}

func TestATenantsOwnAPNsAccountSendsItsDevicesAndOnlyIts(t *testing.T) {
	t.Parallel()
	b, a := setup(t), newTenantAccounts(t)
	globexAPNs := a.apnsAccount(t, "globex", "globex-apns")
	c := b.channelWithAccounts(t, a, ofTenant("globex", device("ipad", recipient.DeviceAPNs, iPadToken)),
		device("ipad", recipient.DeviceAPNs, iPadToken2))

	d := shipped()
	d.Tenant = "globex"
	r, err := try(t, c, d)
	require.NoError(t, err)
	require.Equal(t, "apns:ipad accepted", r.Note)
	require.Len(t, globexAPNs.Pushes(), 1, "signed with globex's own key, team and topic")
	require.Empty(t, b.apns.Pushes(), "the platform's APNs is not called for globex")

	_, err = try(t, c, shipped())
	require.NoError(t, err)
	require.Len(t, b.apns.Pushes(), 1, "acme has no account of its own: the platform's")
	require.Equal(t, iPadToken2, b.apns.Pushes()[0].Token)
	require.Len(t, globexAPNs.Pushes(), 1)
}

func TestATenantsFCMAccountLeavesItsBrowsersToThePlatformsWebPush(t *testing.T) {
	t.Parallel()
	b, a := setup(t), newTenantAccounts(t)
	acmeFCM := fcmtest.New(t)
	require.NoError(t, a.store.Put(heraldtest.Context(t), "acme", vault.Credential{Name: "acme-fcm", Type: vault.TypeFCM,
		ServiceAccount: vault.NewSecret(string(acmeFCM.ServiceAccountJSON())), Endpoint: acmeFCM.Endpoint()}))
	c := b.channelWithAccounts(t, a, b.browser(t, "laptop", ""), device("phone", recipient.DeviceFCM, "fcm-token-1"))

	r, err := try(t, c, shipped())
	require.NoError(t, err)
	require.Equal(t, "webpush:laptop accepted; fcm:phone accepted", r.Note)
	require.Len(t, b.webpush.Pushes(), 1, "no webpush account of its own: the platform's")
	require.Len(t, acmeFCM.Messages(), 1, "its phone through its own FCM project")
	require.Empty(t, b.fcm.Messages())
}

func TestATenantsSenderIsBuiltOncePerRevisionOfItsAccount(t *testing.T) {
	t.Parallel()
	b, a := setup(t), newTenantAccounts(t)
	first := a.apnsAccount(t, "acme", "acme-apns")
	c := b.channelWithAccounts(t, a, device("ipad", recipient.DeviceAPNs, iPadToken))

	for range 2 {
		_, err := try(t, c, shipped())
		require.NoError(t, err)
	}
	require.Len(t, first.Pushes(), 2)
	require.EqualValues(t, 1, a.builds.Load(), "the account was not changed: its sender is reused")

	second := a.apnsAccount(t, "acme", "acme-apns") // a new key: a new revision
	a.tick(2 * time.Minute)                         // past the list's TTL
	_, err := try(t, c, shipped())
	require.NoError(t, err)
	require.Len(t, second.Pushes(), 1, "the replaced account's new key is used")
	require.Len(t, first.Pushes(), 2)
	require.EqualValues(t, 2, a.builds.Load())

	require.NoError(t, a.store.Delete(heraldtest.Context(t), "acme", "acme-apns"))
	a.tick(2 * time.Minute)
	_, err = try(t, c, shipped())
	require.NoError(t, err)
	require.Len(t, b.apns.Pushes(), 1, "a removed account leaves its devices to the platform's")
}

func TestATenantsAccountThatCannotBeBuiltFailsOnlyItsKindForGood(t *testing.T) {
	t.Parallel()
	b, a := setup(t), newTenantAccounts(t)
	a.apnsAccount(t, "acme", "acme-apns")
	broken := func(list ...recipient.Device) *push.Channel {
		c, err := push.NewChannel(push.ChannelConfig{Devices: newDevices(list...), Senders: b.senders,
			Accounts: &push.TenantSenders{Accounts: a.store, Build: func(context.Context, string, vault.Credential) (push.Sender, error) {
				return nil, errors.New("apns: AuthKey is not PEM (a .p8 file's contents)")
			}}})
		require.NoError(t, err)
		return c
	}

	r, err := try(t, broken(device("ipad", recipient.DeviceAPNs, iPadToken), b.browser(t, "laptop", "")), shipped())
	require.NoError(t, err, "the browser took it")
	require.Equal(t, `apns:ipad failed: permanent: tenant "acme"'s apns account "acme-apns": apns: AuthKey is not PEM (a .p8 file's contents); webpush:laptop accepted`, r.Note)
	require.Empty(t, b.apns.Pushes(), "not the platform's either: the tenant chose its own account")

	_, err = try(t, broken(device("ipad", recipient.DeviceAPNs, iPadToken)), shipped())
	require.True(t, provider.IsPermanent(err), "no retry fixes an account: %v", err)
}

func TestAnAccountRemovedSinceItWasListedLeavesItsDevicesToThePlatform(t *testing.T) {
	t.Parallel()
	b, a := setup(t), newTenantAccounts(t)
	acmeAPNs := a.apnsAccount(t, "acme", "acme-apns")
	laptop := b.browser(t, "laptop", "")
	c := b.channelWithAccounts(t, a, laptop)
	_, err := try(t, c, shipped()) // lists acme's accounts; a browser opens none of them
	require.NoError(t, err)
	require.Zero(t, a.builds.Load(), "no device of the account's kind: it is not opened")

	require.NoError(t, a.store.Delete(heraldtest.Context(t), "acme", "acme-apns"))
	b.directory.byID["acme/sub_1"] = append(b.directory.byID["acme/sub_1"], device("ipad", recipient.DeviceAPNs, iPadToken))
	r, err := try(t, c, shipped()) // the list still names it
	require.NoError(t, err)
	require.Equal(t, "webpush:laptop accepted; apns:ipad accepted", r.Note)
	require.Len(t, b.apns.Pushes(), 1, "the platform's")
	require.Empty(t, acmeAPNs.Pushes())
}
