package vault_test

import (
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
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
	dir := t.TempDir()
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
	for _, c := range []vault.Credential{sesCredential(), sendgridCredential(), smtpCredential()} {
		require.NoError(t, store.Put(ctx, "acme", c))
	}
	next, _ := newKey(t)
	_, err = vault.Rotate(ctx, store, keyring(t, next, old), nil)
	require.NoError(t, err)
	nc.Close()
	srv.Shutdown() // everything on disk, nothing only in memory

	found := storedBytes(t, dir)
	// Contains would print what it searched, and so the secret it found.
	require.True(t, strings.Contains(found, "acme.sendgrid"), "the scan reads where the bucket is kept")
	require.True(t, strings.Contains(found, "****s5cr"), "the previews are stored")
	for _, secret := range []string{sesKeyID, sesSecret, sendgridKey, smtpPassword} {
		for _, needle := range secretForms(secret) {
			require.False(t, strings.Contains(found, needle), "%d bytes of a secret are on disk", len(needle))
		}
	}
}

// storedBytes is every file under dir, concatenated.
func storedBytes(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		all.Write(b)
		all.WriteByte(0)
		return err
	})
	require.NoError(t, err)
	return all.String()
}

// secretForms are what would betray a secret: every 8 bytes of it, and it
// whole in base64 and hex.
func secretForms(secret string) []string {
	forms := []string{
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawURLEncoding.EncodeToString([]byte(secret)),
		hex.EncodeToString([]byte(secret)),
	}
	for i := 0; i+8 <= len(secret); i++ {
		forms = append(forms, secret[i:i+8])
	}
	return forms
}
