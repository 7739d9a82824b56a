package vault_test

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
)

// pushKeys are one test's push secrets, made afresh.
type pushKeys struct {
	p8, serviceAccount, vapidPrivate, vapidPublic string
}

func newPushKeys(t *testing.T) pushKeys {
	t.Helper()
	var k pushKeys
	k.p8 = pkcs8PEM(t, must(t, func() (any, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }))
	b, err := json.Marshal(map[string]string{"type": "service_account", "project_id": "acme-shop",
		"client_email": "herald@acme-shop.iam.gserviceaccount.com",
		"private_key":  pkcs8PEM(t, must(t, func() (any, error) { return rsa.GenerateKey(rand.Reader, 2048) }))})
	require.NoError(t, err)
	k.serviceAccount = string(b)
	vapid, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	k.vapidPrivate = base64.RawURLEncoding.EncodeToString(vapid.Bytes())
	k.vapidPublic = base64.RawURLEncoding.EncodeToString(vapid.PublicKey().Bytes())
	return k
}

func must(t *testing.T, f func() (any, error)) any {
	t.Helper()
	v, err := f()
	require.NoError(t, err)
	return v
}

func pkcs8PEM(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// secrets are the parts of the keys that must never be shown: a PEM's
// body, not its armour.
func (k pushKeys) secrets() []string {
	body := func(p string) string { return strings.Split(p, "\n")[1] }
	return []string{body(k.p8), k.vapidPrivate, body(strings.ReplaceAll(strings.Split(k.serviceAccount, `"private_key":"`)[1], `\n`, "\n"))}
}

// secretParts are every 16 characters of the key material of c and of
// keys' (PEM bodies, not their armour): an error quoting any part of a key
// holds one of them.
func secretParts(c vault.Credential, keys ...pushKeys) []string {
	material := []string{c.AuthKey.Reveal(), c.VAPIDPrivateKey.Reveal(), c.ServiceAccount.Reveal()}
	for _, k := range keys {
		material = append(material, k.p8, k.vapidPrivate, k.serviceAccount)
	}
	var parts []string
	for _, m := range material {
		for _, line := range strings.Split(strings.ReplaceAll(m, `\n`, "\n"), "\n") {
			if strings.HasPrefix(line, "-----") || strings.Contains(line, `"`) {
				continue // armour, or the JSON around a key
			}
			for i := 0; i+16 <= len(line); i++ {
				parts = append(parts, line[i:i+16])
			}
		}
	}
	return parts
}

func (k pushKeys) fcm() vault.Credential {
	return vault.Credential{Name: "acme-fcm", Type: vault.TypeFCM, ServiceAccount: vault.NewSecret(k.serviceAccount)}
}

func (k pushKeys) apns() vault.Credential {
	return vault.Credential{Name: "acme-apns", Type: vault.TypeAPNs, AuthKey: vault.NewSecret(k.p8), APNsKeyID: "ABC123DEFG",
		TeamID: "DEF123GHIJ", Topic: "com.acme.shop", Production: true}
}

func (k pushKeys) webpush() vault.Credential {
	return vault.Credential{Name: "acme-webpush", Type: vault.TypeWebPush, VAPIDPublicKey: k.vapidPublic,
		VAPIDPrivateKey: vault.NewSecret(k.vapidPrivate), Contact: "mailto:ops@acme.example"}
}

func TestPushAccountsAreRefusedNamingTheFieldNeverTheSecret(t *testing.T) {
	t.Parallel()
	k, other := newPushKeys(t), newPushKeys(t)
	for _, ok := range []vault.Credential{k.fcm(), k.apns(), k.webpush()} {
		require.NoError(t, ok.Validate(), ok.Type)
	}
	p384 := pkcs8PEM(t, must(t, func() (any, error) { return ecdsa.GenerateKey(elliptic.P384(), rand.Reader) }))
	for _, c := range []struct {
		edit func(*vault.Credential)
		base vault.Credential
		want string
	}{
		{func(c *vault.Credential) { c.ServiceAccount = vault.Secret{} }, k.fcm(), "service_account: is required for fcm"},
		{func(c *vault.Credential) { c.ServiceAccount = vault.NewSecret(k.serviceAccount[1:]) }, k.fcm(), "service_account: is not JSON"},
		{func(c *vault.Credential) {
			c.ServiceAccount = vault.NewSecret(strings.Replace(k.serviceAccount, `"project_id":"acme-shop"`, `"project_id":""`, 1))
		}, k.fcm(), "service_account: names no project_id"},
		{func(c *vault.Credential) {
			c.ServiceAccount = vault.NewSecret(strings.Replace(k.serviceAccount, "service_account", "authorized_user", 1))
		}, k.fcm(), "service_account: is not a service account's key file"},
		{func(c *vault.Credential) {
			var account map[string]string
			require.NoError(t, json.Unmarshal([]byte(k.serviceAccount), &account))
			account["private_key"] = k.p8 // ECDSA: Google signs its tokens with RSA
			b, err := json.Marshal(account)
			require.NoError(t, err)
			c.ServiceAccount = vault.NewSecret(string(b))
		}, k.fcm(), "service_account: has no PEM RSA private_key"},
		{func(c *vault.Credential) { c.Topic = "com.acme.shop" }, k.fcm(), "topic: is not used by fcm"},
		{func(c *vault.Credential) { c.AuthKey = vault.NewSecret(k.p8[40:]) }, k.apns(), "auth_key: is not PEM (a .p8 file's contents)"},
		{func(c *vault.Credential) { c.AuthKey = vault.NewSecret(p384) }, k.apns(), "auth_key: is not a PKCS#8 P-256 private key, as ES256 needs"},
		{func(c *vault.Credential) { c.AuthKey = vault.Secret{} }, k.apns(), "auth_key: is required for apns"},
		{func(c *vault.Credential) { c.TeamID = "" }, k.apns(), "apns_key_id, team_id, topic: all are required for apns"},
		{func(c *vault.Credential) { c.Endpoint = "http://127.0.0.1:2197" }, k.apns(), `endpoint: "http://127.0.0.1:2197" is not an https URL`},
		{func(c *vault.Credential) { c.VAPIDPublicKey = other.vapidPublic }, k.webpush(), "vapid_public_key: is not the public key of vapid_private_key"},
		{func(c *vault.Credential) { c.VAPIDPrivateKey = vault.NewSecret(k.vapidPrivate + "!") }, k.webpush(), "vapid_private_key: is not a P-256 private key, base64url"},
		{func(c *vault.Credential) { c.VAPIDPublicKey = "BNcR" }, k.webpush(), "vapid_public_key: is not an uncompressed P-256 public key, base64url"},
		{func(c *vault.Credential) { c.Contact = "ops@acme.example" }, k.webpush(), `contact: "ops@acme.example" is not a mailto: address or an https: URL`},
		{func(c *vault.Credential) { c.Endpoint = "https://fcm.example" }, k.webpush(), "endpoint: is not used by webpush"},
	} {
		cred := c.base
		c.edit(&cred)
		err := cred.Validate()
		require.ErrorContains(t, err, c.want)
		for _, part := range secretParts(cred, k, other) {
			require.False(t, strings.Contains(err.Error(), part), "%s: an error shows a secret", c.want)
		}
	}
}

func TestPushAccountsAreSealedAndListedWithoutTheirSecrets(t *testing.T) {
	t.Parallel()
	b, k := setup(t), newPushKeys(t)
	ctx := heraldtest.Context(t)
	for _, c := range []vault.Credential{k.fcm(), k.apns(), k.webpush()} {
		require.NoError(t, b.store.Put(ctx, "acme", c))
		got, err := b.store.Get(ctx, "acme", c.Name)
		require.NoError(t, err)
		require.Equal(t, [...]any{c.Type, c.APNsKeyID, c.TeamID, c.Topic, c.Production, c.VAPIDPublicKey, c.Contact},
			[...]any{got.Type, got.APNsKeyID, got.TeamID, got.Topic, got.Production, got.VAPIDPublicKey, got.Contact})
		// Compared, not shown: a failure must not print a key.
		require.True(t, c.ServiceAccount.Reveal() == got.ServiceAccount.Reveal() && c.AuthKey.Reveal() == got.AuthKey.Reveal() &&
			c.VAPIDPrivateKey.Reveal() == got.VAPIDPrivateKey.Reveal(), "%s: the secrets decrypt to what was stored", c.Type)
	}
	list, err := b.store.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.Equal(t, [...]string{"acme-shop", "ABC123DEFG", "DEF123GHIJ", "com.acme.shop", k.vapidPublic, "mailto:ops@acme.example"},
		[...]string{list[1].ProjectID, list[0].APNsKeyID, list[0].TeamID, list[0].Topic, list[2].VAPIDPublicKey, list[2].Contact},
		"the settings are listed, and fcm's project is read from its service account")
	require.True(t, list[0].Production)
	for _, info := range list {
		require.Regexp(t, `^\*\*\*\*[A-Za-z0-9+/=_-]{4}$`, info.Preview, "%s: the key's last 4, not its file's armour", info.Type)
	}
	listed, err := json.Marshal(list)
	require.NoError(t, err)
	printed := fmt.Sprintf("%+v %+v %+v %s", k.fcm(), k.apns(), k.webpush(), listed)
	for _, secret := range k.secrets() {
		require.NotContains(t, printed, secret, "a secret is listed or printed")
	}
}
