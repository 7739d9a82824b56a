package resource_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/resource"
)

// Records under a prefix — a topic's members — are listed a page at a
// time and removed together, and the records beside them (another topic's
// under the same tenant, one whose token merely starts alike) are neither
// listed nor removed. Every removal is a delete marker: a watcher's cache
// loses the records too.
func TestRecordsUnderAPrefixAreListedAndRemovedTogether(t *testing.T) {
	t.Parallel()
	kind := notes
	kind.MaxPerTenant = 0
	ctx, b := setup(t, kind)
	for i := range 5 {
		_, err := b.store.Put(ctx, note{Tenant: "acme", ID: fmt.Sprintf("t1.m%d", i), Text: "x"})
		require.NoError(t, err)
	}
	for _, id := range []string{"t2.m0", "t1x.m0", "t1"} {
		_, err := b.store.Put(ctx, note{Tenant: "acme", ID: id, Text: "x"})
		require.NoError(t, err)
	}
	cache, err := resource.Watch(ctx, b.js, kind)
	require.NoError(t, err)
	defer cache.Stop()

	page, next, err := b.store.ListUnder(ctx, "acme.t1", resource.Page{Limit: 3})
	require.NoError(t, err)
	require.Equal(t, []string{"t1.m0", "t1.m1", "t1.m2"}, ids(page))
	require.Equal(t, "acme.t1.m2", next)
	page, next, err = b.store.ListUnder(ctx, "acme.t1", resource.Page{After: next, Limit: 3})
	require.NoError(t, err)
	require.Equal(t, []string{"t1.m3", "t1.m4"}, ids(page))
	require.Empty(t, next)
	_, _, err = b.store.ListUnder(ctx, "acme.*", resource.Page{})
	require.ErrorIs(t, err, resource.ErrInvalid, "a wildcard is not a prefix")

	n, err := b.store.DeleteUnder(ctx, "acme.t1")
	require.NoError(t, err)
	require.Equal(t, 5, n)
	left, err := b.store.All(ctx, "acme")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"t2.m0", "t1x.m0", "t1"}, ids(left))
	require.Eventually(t, func() bool { _, ok := cache.Get("acme.t1.m0"); return !ok }, 10*time.Second, 5*time.Millisecond,
		"the watcher saw the delete")
	n, err = b.store.DeleteUnder(ctx, "acme.t1")
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to remove")
}

func ids(ns []note) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}
