package app

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/apns/apnstest"
	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/shared/vault"
)

// A tenant's push accounts are built into the providers the platform's
// config builds: an FCM account sends through its own project and
// endpoint, and one that cannot be built is no sender at all.
func TestATenantsPushAccountsAreBuiltAsThePlatformsAre(t *testing.T) {
	t.Parallel()
	a := &App{}
	ctx := context.Background()
	fake := fcmtest.New(t)
	s, err := a.buildPushAccount(ctx, "acme", vault.Credential{Name: "acme-fcm", Type: vault.TypeFCM,
		ServiceAccount: vault.NewSecret(string(fake.ServiceAccountJSON())), Endpoint: fake.Endpoint()})
	require.NoError(t, err)
	_, err = s.Send(ctx, push.Message{ID: "ntf_1", Token: "fcm-token-1", Title: "Shipped", Body: "Your order shipped."})
	require.NoError(t, err)
	require.Len(t, fake.Messages(), 1, "through the account's own project and endpoint")

	p8, _ := apnstest.NewKey(t)
	_, err = a.buildPushAccount(ctx, "acme", vault.Credential{Type: vault.TypeAPNs, AuthKey: vault.NewSecret(p8),
		APNsKeyID: "ABC123DEFG", TeamID: "DEF123GHIJ", Topic: "com.acme.shop"})
	require.NoError(t, err)
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	_, err = a.buildPushAccount(ctx, "acme", vault.Credential{Type: vault.TypeWebPush, VAPIDPublicKey: public,
		VAPIDPrivateKey: vault.NewSecret(private), Contact: "mailto:ops@acme.example"})
	require.NoError(t, err)

	s, err = a.buildPushAccount(ctx, "acme", vault.Credential{Type: vault.TypeAPNs, AuthKey: vault.NewSecret("not a key"),
		APNsKeyID: "ABC123DEFG", TeamID: "DEF123GHIJ", Topic: "com.acme.shop"})
	require.ErrorContains(t, err, "apns: AuthKey is not PEM")
	require.True(t, s == nil, "no sender, not a nil one that passes for a sender")
	_, err = a.buildPushAccount(ctx, "acme", vault.Credential{Type: vault.TypeSendGrid})
	require.EqualError(t, err, `"sendgrid" is not a push provider type`)
}
