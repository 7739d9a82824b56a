package resource_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/resource"
)

// A purge leaves nothing of the record in the bucket's stream — not the
// current revision, not the earlier ones a Delete would leave readable,
// not the ones behind an earlier delete marker — only a marker naming who
// purged; the key can be written again.
func TestPurgeLeavesNoRevisionOfTheRecord(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, notes)
	for _, text := range []string{"secret one", "secret two"} {
		_, err := b.store.Put(ctx, note{Tenant: "acme", ID: "n1", Text: text})
		require.NoError(t, err)
	}
	require.NoError(t, b.store.Delete(ctx, "acme.n1"))
	_, err := b.store.Put(ctx, note{Tenant: "acme", ID: "n1", Text: "secret three"})
	require.NoError(t, err)
	kept, err := b.store.Revisions(ctx, "acme.n1")
	require.NoError(t, err)
	require.Len(t, kept, 3, "the history holds every record written, the deleted ones too")
	_, err = b.store.Put(ctx, note{Tenant: "acme", ID: "n2", Text: "another"})
	require.NoError(t, err)

	found, err := b.store.Purge(resource.WithActor(ctx, "key:k1"), "acme.n1")
	require.NoError(t, err)
	require.True(t, found)

	for _, m := range heraldtest.StreamMessages(t, b.js, "KV_notes") {
		require.NotContains(t, string(m.Data), "secret", "revision %d of %s", m.Sequence, m.Subject)
	}
	kept, err = b.store.Revisions(ctx, "acme.n1")
	require.NoError(t, err)
	require.Empty(t, kept)
	_, _, err = b.store.Get(ctx, "acme.n1")
	require.ErrorIs(t, err, resource.ErrNotFound)
	changes, err := b.store.Changes(ctx, "acme.n1")
	require.NoError(t, err)
	require.Len(t, changes, 1, "the purge marker alone")
	require.True(t, changes[0].Deleted)
	require.Equal(t, "key:k1", changes[0].Actor)
	other, _, err := b.store.Get(ctx, "acme.n2")
	require.NoError(t, err)
	require.Equal(t, "another", other.Text, "another key is untouched")

	found, err = b.store.Purge(ctx, "acme.n1")
	require.NoError(t, err)
	require.False(t, found, "nothing left to purge")
	_, err = b.store.Create(ctx, note{Tenant: "acme", ID: "n1", Text: "anew"})
	require.NoError(t, err, "a purged key is written again")
}

// Match lists the tenant's keys a pattern names, deleted ones included,
// and none of another tenant's; a pattern that is not one is refused.
func TestMatchListsTheTenantsKeysThePatternNames(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, resource.Kind[note]{Name: "note", Bucket: "notes", Key: func(n note) string { return n.Tenant + "." + n.ID }})
	for _, n := range []note{{"acme", "t1.olga", "x"}, {"acme", "t2.olga", "x"}, {"acme", "t2.ivan", "x"}, {"globex", "t1.olga", "x"}} {
		_, err := b.store.Put(ctx, n)
		require.NoError(t, err)
	}
	require.NoError(t, b.store.Delete(ctx, "acme.t2.olga"))

	keys, err := b.store.Match(ctx, "acme", "*.olga")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"acme.t1.olga", "acme.t2.olga"}, keys)
	keys, err = b.store.Match(ctx, "acme", "*.nobody")
	require.NoError(t, err)
	require.Empty(t, keys)
	for _, bad := range []string{">", "*.>", "a b", "", "t1..olga"} {
		_, err = b.store.Match(ctx, "acme", bad)
		require.ErrorIs(t, err, resource.ErrInvalid, bad)
	}
	_, err = b.store.Match(ctx, "*", "t1.olga")
	require.ErrorIs(t, err, resource.ErrInvalid)
}
