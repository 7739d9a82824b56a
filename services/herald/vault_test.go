package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
)

// Rotation re-encrypts every tenant's credentials under the new key, after
// which the new key alone opens them; run again, it has nothing to do.
// Not parallel: it sets the environment.
func TestVaultRotate(t *testing.T) {
	n, oldFile := vaultSetup(t)
	ctx := heraldtest.Context(t)
	old, err := vault.ReadKeyFile(oldFile)
	require.NoError(t, err)
	oldText, err := os.ReadFile(oldFile)
	require.NoError(t, err)
	t.Setenv("HERALD_MASTER_KEY", string(oldText))
	for i, tenant := range []string{"acme", "acme", "globex"} {
		_, err := herald(t, "providers", "set", "--tenant", tenant, "--name", fmt.Sprintf("sendgrid-%d", i), "--type", "sendgrid",
			"--api-key-file", secretFile(t, fmt.Sprintf("%s-%d", cliAPIKey, i)))
		require.NoError(t, err)
	}
	newFile := filepath.Join(t.TempDir(), "new.key")
	next, err := vault.GenerateKeyFile(newFile)
	require.NoError(t, err)

	_, err = herald(t, "vault", "rotate", "--new-key-file", oldFile)
	require.EqualError(t, err, "--new-key-file holds the current master key ("+old.ID()+") already: give a new key")

	out, err := herald(t, "vault", "rotate", "--new-key-file", newFile)
	require.NoError(t, err, out)
	require.True(t, strings.HasSuffix(out, "re-encrypted 3 of 3 credentials under key "+next.ID()+" (0 were under it already)\n"+
		"every credential is sealed under key "+next.ID()+": key ["+old.ID()+"] may go once no service holds it any more\n"), out)

	keys, err := vault.NewKeyring(next)
	require.NoError(t, err)
	store, err := vault.Open(ctx, n.JS, keys)
	require.NoError(t, err)
	for i, tenant := range []string{"acme", "acme", "globex"} {
		c, err := store.Get(ctx, tenant, fmt.Sprintf("sendgrid-%d", i))
		require.NoError(t, err, "the new key alone opens it")
		require.True(t, c.APIKey.Reveal() == fmt.Sprintf("%s-%d", cliAPIKey, i))
	}

	t.Setenv("HERALD_MASTER_KEY", "")
	out, err = herald(t, "vault", "rotate", "--master-key-file", oldFile, "--new-key-file", newFile)
	require.NoError(t, err)
	require.Contains(t, out, "re-encrypted 0 of 3 credentials under key "+next.ID()+" (3 were under it already)\n")
}

// A credential sealed under a key the rotation was not given stays as it
// is, and the rotation says so instead of declaring the old key free to go.
// Not parallel: it sets the environment.
func TestVaultRotateKeepsWhatItCannotOpen(t *testing.T) {
	_, oldFile := vaultSetup(t)
	lostFile := filepath.Join(t.TempDir(), "lost.key")
	lost, err := vault.GenerateKeyFile(lostFile)
	require.NoError(t, err)
	for _, key := range []string{oldFile, lostFile} {
		_, err := herald(t, "providers", "set", "--master-key-file", key, "--tenant", "acme", "--name", filepath.Base(key)[:4],
			"--type", "sendgrid", "--api-key-file", secretFile(t, cliAPIKey))
		require.NoError(t, err)
	}
	newFile := filepath.Join(t.TempDir(), "new.key")
	_, err = vault.GenerateKeyFile(newFile)
	require.NoError(t, err)

	out, err := herald(t, "vault", "rotate", "--master-key-file", oldFile, "--new-key-file", newFile)
	require.ErrorContains(t, err, "acme.lost: vault: sealed under a key this keyring does not hold: key "+lost.ID())
	require.ErrorContains(t, err, "keep it, and run the rotation again")
	require.Contains(t, out, "re-encrypted 1 of 2 credentials")
	require.NotContains(t, out, "may go")

	out, err = herald(t, "vault", "rotate", "--master-key-file", oldFile, "--previous-key-file", lostFile, "--new-key-file", newFile)
	require.NoError(t, err)
	require.Contains(t, out, "re-encrypted 1 of 2 credentials")
	require.Contains(t, out, "may go")
}
