package vault_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/streams"
)

// After credentials are stored, rotated and read back, no byte sequence of
// any secret — nor its base64 or hex — is anywhere in the server's store:
// only their ciphertext and previews are.
func TestNoSecretIsStoredInTheClear(t *testing.T) {
	t.Parallel()
	dir := heraldtest.StoreDir(t)
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: dir})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := heraldtest.Context(t)
	report, err := streams.Apply(ctx, js, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())

	old, _ := newKey(t)
	store, err := vault.Open(ctx, js, keyring(t, old))
	require.NoError(t, err)
	for _, c := range []vault.Credential{sesCredential(), sendgridCredential(), smtpCredential(), twilioCredential(), awssmsCredential()} {
		require.NoError(t, store.Put(ctx, "acme", c))
	}
	next, _ := newKey(t)
	_, err = vault.Rotate(ctx, store, keyring(t, next, old), nil)
	require.NoError(t, err)
	nc.Close()
	srv.Shutdown() // everything on disk, nothing only in memory

	found := heraldtest.StoredBytes(t, dir)
	// Contains would print what it searched, and so the secret it found.
	require.True(t, strings.Contains(found, "acme.sendgrid"), "the scan reads where the bucket is kept")
	require.True(t, strings.Contains(found, "****s5cr"), "the previews are stored")
	heraldtest.RequireNoSecret(t, found, "the store", secrets...)
}
