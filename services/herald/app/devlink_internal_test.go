package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Dev signs links with DataDir/link.key, made private on first use and the
// same on every later run — the CLI beside dev erases with it, and links in
// mail from an earlier run keep working — unless a link secret is
// configured, when it makes no file.
func TestDevLinkSecretIsKeptInItsDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var first, again Config
	require.NoError(t, useDevLinkSecret(&first, dir))
	secret, err := LinkSecret(first)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(secret), 32)
	require.NoError(t, useDevLinkSecret(&again, dir))
	secretAgain, err := LinkSecret(again)
	require.NoError(t, err)
	require.Equal(t, secret, secretAgain, "the next run signs as this one")
	info, err := os.Stat(DevLinkKeyFile(dir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	other := t.TempDir()
	configured := Config{Documents: DocumentsConfig{LinkSecretEnv: "HERALD_LINK_SECRET"}}
	require.NoError(t, useDevLinkSecret(&configured, other))
	require.Equal(t, "HERALD_LINK_SECRET", configured.Documents.LinkSecretEnv)
	require.Empty(t, configured.Documents.LinkSecretFile)
	_, err = os.Stat(filepath.Join(other, "link.key"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
