package main

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
)

// p8 is a .p8 key of curve, as Apple's developer site downloads one.
func p8(t *testing.T, curve elliptic.Curve) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(curve, rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// A tenant's APNs and Web Push accounts are stored from files and listed
// by their settings; a key of the wrong curve is refused naming the field,
// the key itself shown nowhere. Not parallel: it sets the environment.
func TestProvidersSetStoresPushAccounts(t *testing.T) {
	n, keyFile := vaultSetup(t)
	apnsKey, p384 := p8(t, elliptic.P256()), p8(t, elliptic.P384())
	vapid, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	vapidPrivate := base64.RawURLEncoding.EncodeToString(vapid.Bytes())
	vapidPublic := base64.RawURLEncoding.EncodeToString(vapid.PublicKey().Bytes())
	noKey := func(out string) {
		for _, key := range []string{apnsKey, p384} {
			require.False(t, strings.Contains(out, strings.Split(key, "\n")[1][:16]), "a key is shown")
		}
		require.False(t, strings.Contains(out, vapidPrivate[:16]), "a key is shown")
	}
	set := []string{"providers", "set", "--master-key-file", keyFile, "--tenant", "globex"}

	out, err := herald(t, append(set, "--name", "globex-apns", "--type", "apns", "--auth-key-file", secretFile(t, p384),
		"--apns-key-id", "ABC123DEFG", "--team-id", "DEF123GHIJ", "--topic", "com.globex.shop")...)
	require.ErrorContains(t, err, "auth_key: is not a PKCS#8 P-256 private key, as ES256 needs")
	noKey(out + err.Error())

	out, err = herald(t, append(set, "--name", "globex-apns", "--type", "apns", "--auth-key-file", secretFile(t, apnsKey),
		"--apns-key-id", "ABC123DEFG", "--team-id", "DEF123GHIJ", "--topic", "com.globex.shop", "--production")...)
	require.NoError(t, err)
	noKey(out)
	out, err = herald(t, append(set, "--name", "globex-webpush", "--type", "webpush", "--vapid-private-key-file", secretFile(t, vapidPrivate),
		"--vapid-public-key", vapidPublic, "--contact", "mailto:ops@globex.example")...)
	require.NoError(t, err)
	noKey(out)

	out, err = herald(t, "providers", "list", "--tenant", "globex")
	require.NoError(t, err)
	noKey(out)
	require.Contains(t, out, "apns_key=ABC123DEFG team=DEF123GHIJ topic=com.globex.shop apns=production")
	require.Contains(t, out, "vapid_public_key="+vapidPublic+" contact=mailto:ops@globex.example")

	key, err := vault.ReadKeyFile(keyFile)
	require.NoError(t, err)
	keys, err := vault.NewKeyring(key)
	require.NoError(t, err)
	store, err := vault.Open(heraldtest.Context(t), n.JS, keys)
	require.NoError(t, err)
	got, err := store.Get(heraldtest.Context(t), "globex", "globex-apns")
	require.NoError(t, err)
	require.True(t, got.AuthKey.Reveal() == strings.TrimSpace(apnsKey) && got.Production, "the .p8 as its file held it")
}
