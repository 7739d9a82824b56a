package app

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push/webpush"
)

// Dev configures Web Push with DataDir's VAPID pair, made on first use
// (the private half 0600) and the same on every later run — a browser
// subscribed in an earlier run is bound to its public key — unless
// push.webpush is configured, when it makes no file.
func TestDevVAPIDKeysAreKeptInItsDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var first, again Config
	require.NoError(t, useDevVAPIDKeys(&first, dir))
	w := first.Push.WebPush
	require.NotNil(t, w)
	require.NotEmpty(t, w.VAPIDPublicKey)
	require.Equal(t, "mailto:dev@localhost", w.Contact)
	private, err := os.ReadFile(w.VAPIDPrivateKeyFile)
	require.NoError(t, err)
	// The pair is one: the Web Push provider refuses halves of two pairs.
	_, err = webpush.New(webpush.Config{VAPIDPublicKey: w.VAPIDPublicKey, VAPIDPrivateKey: string(private), Subscriber: w.Contact})
	require.NoError(t, err)
	info, err := os.Stat(w.VAPIDPrivateKeyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	require.NoError(t, useDevVAPIDKeys(&again, dir))
	require.Equal(t, *w, *again.Push.WebPush, "the next run pushes as this one")
	privateAgain, err := os.ReadFile(again.Push.WebPush.VAPIDPrivateKeyFile)
	require.NoError(t, err)
	require.Equal(t, private, privateAgain)

	other := t.TempDir()
	configured := Config{Push: PushConfig{WebPush: &WebPushConfig{VAPIDPublicKey: "configured", VAPIDPrivateKeyEnv: "VAPID_PRIVATE_KEY"}}}
	require.NoError(t, useDevVAPIDKeys(&configured, other))
	require.Equal(t, "configured", configured.Push.WebPush.VAPIDPublicKey)
	privatePath, _ := DevVAPIDKeyFiles(other)
	_, err = os.Stat(privatePath)
	require.ErrorIs(t, err, os.ErrNotExist)
}
