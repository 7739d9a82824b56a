package tenant_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/tenant"
)

// watch starts a cache for the test; it stops when the test ends.
func (b testBundle) watch(t *testing.T) *tenant.Cache {
	t.Helper()
	c, err := tenant.Watch(heraldtest.Context(t), b.n.JS)
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	return c
}

// eventually waits for the cache to see what the test wrote. A KV watch
// delivers within milliseconds; the generous bound is for a loaded machine
// running -race, not a promise.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond, msg)
}

func TestCacheLoadsBeforeReturning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	for _, id := range []string{"acme", "baltic", "zarya"} {
		x := valid()
		x.ID = id
		_, err := b.reg.Create(ctx, x)
		require.NoError(t, err)
	}
	_, err := b.reg.Update(ctx, "zarya", func(x *tenant.Tenant) error { x.Status = tenant.Suspended; return nil })
	require.NoError(t, err)

	c := b.watch(t)
	for _, id := range []string{"acme", "baltic", "zarya"} {
		got, ok := c.Lookup(id)
		require.True(t, ok, "%s is there as soon as Watch returns", id)
		require.Equal(t, id, got.ID)
	}
	zarya, _ := c.Lookup("zarya")
	require.Equal(t, tenant.Suspended, zarya.Status, "the latest revision, not the first")
	_, ok := c.Lookup("nobody")
	require.False(t, ok)
}

func TestCacheFollowsCreateUpdateDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	c := b.watch(t)
	_, ok := c.Lookup("acme")
	require.False(t, ok, "an empty registry loads as empty")

	_, err := b.reg.Create(ctx, valid())
	require.NoError(t, err)
	eventually(t, func() bool { _, ok := c.Lookup("acme"); return ok }, "a created tenant appears")

	_, err = b.reg.Update(ctx, "acme", func(x *tenant.Tenant) error { x.Plan = "enterprise"; return nil })
	require.NoError(t, err)
	eventually(t, func() bool { x, _ := c.Lookup("acme"); return x.Plan == "enterprise" }, "an update arrives")

	kv, err := b.n.JS.KeyValue(ctx, tenant.Bucket)
	require.NoError(t, err)
	require.NoError(t, kv.Delete(ctx, "acme")) // an operator's `nats kv del tenants acme`
	eventually(t, func() bool { _, ok := c.Lookup("acme"); return !ok }, "a deleted tenant disappears")

	_, err = b.reg.Create(ctx, valid())
	require.NoError(t, err, "a deleted id can be registered again")
	eventually(t, func() bool { _, ok := c.Lookup("acme"); return ok }, "and reappears")

	_, err = kv.Put(ctx, "acme", []byte(`{"id": "acme", "plan": `)) // a hand edit gone wrong
	require.NoError(t, err)
	eventually(t, func() bool { _, ok := c.Lookup("acme"); return !ok }, "a value that is not a tenant is no tenant")

	require.NoError(t, kv.Purge(ctx, "acme"))
	_, err = b.reg.Create(ctx, valid())
	require.NoError(t, err)
	eventually(t, func() bool { _, ok := c.Lookup("acme"); return ok }, "registered again after a purge")
	require.NoError(t, kv.Purge(ctx, "acme"))
	eventually(t, func() bool { _, ok := c.Lookup("acme"); return !ok }, "a purged tenant disappears")
}

func TestCacheStopsFollowing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	c := b.watch(t)
	c.Stop()
	c.Stop() // and again, as the test's cleanup will

	_, err := b.reg.Create(ctx, valid())
	require.NoError(t, err)
	watching := b.watch(t) // sees the write once it has arrived anywhere
	eventually(t, func() bool { _, ok := watching.Lookup("acme"); return ok }, "the write is visible")
	_, ok := c.Lookup("acme")
	require.False(t, ok, "a stopped cache keeps what it had")
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	_, err := b.reg.Create(ctx, valid())
	require.NoError(t, err)
	_, err = b.reg.Create(ctx, tenant.Tenant{ID: "zarya", Plan: "free", Status: tenant.Suspended})
	require.NoError(t, err)
	c := b.watch(t)

	for _, required := range []bool{true, false} {
		require.NoError(t, c.Admit("acme", required), "an active tenant passes")

		err := c.Admit("zarya", required)
		require.ErrorIs(t, err, tenant.ErrSuspended)
		require.EqualError(t, err, `tenant "zarya" is suspended`, "the dead-letter reason")
	}

	err = c.Admit("nobody", true)
	require.ErrorIs(t, err, tenant.ErrUnknown)
	require.EqualError(t, err, `unknown tenant "nobody"`, "the dead-letter reason")
	require.NoError(t, c.Admit("nobody", false), "unregistered tenants pass unless registration is required")

	_, err = b.reg.Update(ctx, "zarya", func(x *tenant.Tenant) error { x.Status = tenant.Active; return nil })
	require.NoError(t, err)
	eventually(t, func() bool { return c.Admit("zarya", true) == nil }, "a tenant made active again passes")
}
