package resource_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/resource"
)

// Upsert says it created a record where none was — none ever, or one
// deleted — and replaced one that was there; like Put, it writes nothing
// its kind refuses and makes no record past the tenant's count.
func TestUpsertSaysWhetherItCreated(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, notes)
	created, err := b.store.Upsert(ctx, note{Tenant: "acme", ID: "n1", Text: "one"})
	require.NoError(t, err)
	require.True(t, created, "none was there")
	created, err = b.store.Upsert(ctx, note{Tenant: "acme", ID: "n1", Text: "two"})
	require.NoError(t, err)
	require.False(t, created, "one was there")
	got, _, err := b.store.Get(ctx, "acme.n1")
	require.NoError(t, err)
	require.Equal(t, "two", got.Text)

	require.NoError(t, b.store.Delete(ctx, "acme.n1"))
	created, err = b.store.Upsert(ctx, note{Tenant: "acme", ID: "n1", Text: "anew"})
	require.NoError(t, err)
	require.True(t, created, "a deleted record is made again")

	_, err = b.store.Upsert(ctx, note{Tenant: "acme", ID: "n2"})
	require.ErrorIs(t, err, errNoText)
	_, err = b.kv.Get(ctx, "acme.n2")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)
	for _, id := range []string{"n2", "n3"} {
		_, err = b.store.Upsert(ctx, note{Tenant: "acme", ID: id, Text: "x"})
		require.NoError(t, err)
	}
	_, err = b.store.Upsert(ctx, note{Tenant: "acme", ID: "n4", Text: "x"})
	require.ErrorIs(t, err, resource.ErrTooMany)
}
