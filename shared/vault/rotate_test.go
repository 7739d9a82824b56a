package vault_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/vault"
)

// A rotation stopped half-way — the process dies — loses nothing: every
// credential opens with a keyring holding both keys, a service still on the
// old key may write meanwhile, and running the rotation again finishes it.
// Afterwards the new key alone opens everything.
func TestRotateSurvivesARestartHalfWay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	var stored []vault.Credential
	for i := range 10 {
		c := sendgridCredential()
		c.Name = fmt.Sprintf("sendgrid-%d", i)
		c.APIKey = vault.NewSecret(fmt.Sprintf("SG.api-key-of-provider-number-%02d", i))
		stored = append(stored, c)
		require.NoError(t, b.store.Put(ctx, []string{"acme", "globex"}[i%2], c))
	}
	tenant := func(i int) string { return []string{"acme", "globex"}[i%2] }
	next, _ := newKey(t)
	both := keyring(t, next, b.key)

	crash, crashed := context.WithCancel(ctx)
	r, err := vault.Rotate(crash, b.store, both, func(done, _ int) {
		if done == 4 {
			crashed()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, vault.Rotation{Total: 10, Resealed: 4}, r)

	// Half-way: some records under each key, all of them readable.
	restarted, err := vault.Open(ctx, b.n.JS, both)
	require.NoError(t, err)
	keyIDs := map[string]int{}
	for i, want := range stored {
		got, err := restarted.Get(ctx, tenant(i), want.Name)
		require.NoError(t, err)
		requireSame(t, want, got)
	}
	for _, tn := range []string{"acme", "globex"} {
		list, err := restarted.List(ctx, tn)
		require.NoError(t, err)
		for _, info := range list {
			keyIDs[info.KeyID]++
		}
	}
	require.Equal(t, map[string]int{next.ID(): 4, b.key.ID(): 6}, keyIDs)

	// A service not yet restarted rewrites a rotated record under the old key.
	stored[0].APIKey = vault.NewSecret("SG.rewritten-under-the-old-key-000")
	require.NoError(t, b.store.Put(ctx, tenant(0), stored[0]))

	var calls [][2]int
	r, err = vault.Rotate(ctx, restarted, both, func(done, total int) { calls = append(calls, [2]int{done, total}) })
	require.NoError(t, err)
	require.Equal(t, vault.Rotation{Total: 10, Resealed: 7, Current: 3}, r)
	require.Len(t, calls, 10)
	require.Equal(t, [2]int{10, 10}, calls[9])

	r, err = vault.Rotate(ctx, restarted, both, nil)
	require.NoError(t, err)
	require.Equal(t, vault.Rotation{Total: 10, Current: 10}, r, "nothing left to do")

	newOnly, err := vault.Open(ctx, b.n.JS, keyring(t, next))
	require.NoError(t, err)
	for i, want := range stored {
		got, err := newOnly.Get(ctx, tenant(i), want.Name)
		require.NoError(t, err, "the old key can go")
		requireSame(t, want, got)
		require.False(t, got.CreatedAt.IsZero())
	}
	_, err = b.store.Get(ctx, "acme", "sendgrid-2")
	require.ErrorIs(t, err, vault.ErrUnknownKey, "the old keyring alone no longer opens anything")
}

// A record no key of the keyring opens is reported by key and key id; the
// others are rotated all the same.
func TestRotateReportsWhatItCannotOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	require.NoError(t, b.store.Put(ctx, "acme", sendgridCredential()))
	lost, _ := newKey(t)
	orphans, err := vault.Open(ctx, b.n.JS, keyring(t, lost))
	require.NoError(t, err)
	require.NoError(t, orphans.Put(ctx, "acme", smtpCredential()))

	next, _ := newKey(t)
	r, err := vault.Rotate(ctx, b.store, keyring(t, next, b.key), nil)
	require.ErrorIs(t, err, vault.ErrUnknownKey)
	require.ErrorContains(t, err, "acme.relay: vault: sealed under a key this keyring does not hold: key "+lost.ID())
	require.Equal(t, vault.Rotation{Total: 2, Resealed: 1}, r)
}
