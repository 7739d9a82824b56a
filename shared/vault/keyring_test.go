package vault_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/vault"
)

func TestSealOpensOnlyWithTheSameKeyAndData(t *testing.T) {
	t.Parallel()
	current, _ := newKey(t)
	previous, _ := newKey(t)
	stranger, _ := newKey(t)
	r := keyring(t, current, previous)
	plaintext := []byte("SG.a-sendgrid-api-key")
	aad := []byte("acme\x00sendgrid")

	id, sealed := r.Seal(plaintext, aad)
	require.Equal(t, current.ID(), id, "the current key seals")
	require.NotContains(t, string(sealed), string(plaintext))
	_, again := r.Seal(plaintext, aad)
	require.NotEqual(t, sealed, again, "every seal has a fresh nonce")

	got, err := r.Open(id, sealed, aad)
	require.NoError(t, err)
	require.Equal(t, plaintext, got)

	_, err = r.Open(id, sealed, []byte("globex\x00sendgrid"))
	require.ErrorIs(t, err, vault.ErrDecrypt, "another tenant's data")
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	_, err = r.Open(id, tampered, aad)
	require.ErrorIs(t, err, vault.ErrDecrypt)
	_, err = r.Open(id, sealed[:20], aad)
	require.ErrorIs(t, err, vault.ErrDecrypt)

	// An old keyring holding the previous key opens what it sealed.
	oldID, oldSealed := keyring(t, previous).Seal(plaintext, aad)
	got, err = r.Open(oldID, oldSealed, aad)
	require.NoError(t, err)
	require.Equal(t, plaintext, got)

	_, err = keyring(t, stranger).Open(id, sealed, aad)
	require.ErrorIs(t, err, vault.ErrUnknownKey)
	require.ErrorContains(t, err, "key "+current.ID()+" (held: "+stranger.ID()+")")
}

func TestKeyringRefusesAnEmptyKey(t *testing.T) {
	t.Parallel()
	k, _ := newKey(t)
	_, err := vault.NewKeyring(k, vault.Key{})
	require.ErrorContains(t, err, "key 1 of the keyring is empty")
	r, err := vault.NewKeyring(k, k)
	require.NoError(t, err)
	require.Equal(t, []string{k.ID()}, r.IDs(), "a key given twice is held once")
}

func TestWithCurrentKeepsEveryKey(t *testing.T) {
	t.Parallel()
	current, _ := newKey(t)
	previous, _ := newKey(t)
	next, _ := newKey(t)
	r, err := keyring(t, current, previous).WithCurrent(next)
	require.NoError(t, err)
	require.Equal(t, next.ID(), r.Current().ID())
	require.ElementsMatch(t, []string{current.ID(), previous.ID(), next.ID()}, r.IDs())
}
