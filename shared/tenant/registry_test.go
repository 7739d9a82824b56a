package tenant_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/tenant"
)

type testBundle struct {
	n   *heraldtest.NATS
	reg *tenant.Registry
}

func setup(t *testing.T) testBundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	reg, err := tenant.Open(heraldtest.Context(t), n.JS, tenant.BuiltinPlans())
	require.NoError(t, err)
	return testBundle{n: n, reg: reg}
}

func TestCreateGetList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)

	list, err := b.reg.List(ctx)
	require.NoError(t, err)
	require.Empty(t, list)

	before := time.Now().UTC()
	acme, err := b.reg.Create(ctx, valid())
	require.NoError(t, err)
	require.Equal(t, tenant.Active, acme.Status)
	require.False(t, acme.CreatedAt.Before(before), "created now")
	require.Equal(t, acme.CreatedAt, acme.UpdatedAt)

	got, err := b.reg.Get(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, acme.Providers, got.Providers)
	require.True(t, acme.CreatedAt.Equal(got.CreatedAt))
	got.CreatedAt, got.UpdatedAt = acme.CreatedAt, acme.UpdatedAt
	require.Equal(t, acme, got, "what Create returns is what was stored")

	_, err = b.reg.Create(ctx, tenant.Tenant{ID: "zarya", Plan: "free", Status: tenant.Suspended})
	require.NoError(t, err)
	_, err = b.reg.Create(ctx, tenant.Tenant{ID: "baltic", Plan: "indie"})
	require.NoError(t, err)
	list, err = b.reg.List(ctx)
	require.NoError(t, err)
	var ids []string
	for _, x := range list {
		ids = append(ids, x.ID)
	}
	require.Equal(t, []string{"acme", "baltic", "zarya"}, ids)
	require.Equal(t, tenant.Suspended, list[2].Status, "a status given at creation is kept")
}

func TestCreateRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	_, err := b.reg.Create(ctx, valid())
	require.NoError(t, err)

	again := valid()
	again.Plan = "free"
	_, err = b.reg.Create(ctx, again)
	require.ErrorIs(t, err, tenant.ErrExists)
	require.EqualError(t, err, `tenant "acme" is already registered`)
	got, err := b.reg.Get(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, "startup", got.Plan, "the first registration stands")

	_, err = b.reg.Create(ctx, tenant.Tenant{ID: "zarya", Plan: "gold"})
	require.EqualError(t, err, `invalid tenant: plan: "gold" is not a plan (known: enterprise, free, indie, startup)`)
	_, err = b.reg.Get(ctx, "zarya")
	require.ErrorIs(t, err, tenant.ErrNotFound, "nothing invalid is stored")
}

func TestGetUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	for _, id := range []string{"nobody", "not.an.id", ""} {
		_, err := b.reg.Get(ctx, id)
		require.ErrorIs(t, err, tenant.ErrNotFound, id)
		require.EqualError(t, err, `tenant "`+id+`" is not registered`)
	}
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	created, err := b.reg.Create(ctx, valid())
	require.NoError(t, err)

	updated, err := b.reg.Update(ctx, "acme", func(x *tenant.Tenant) error {
		x.Plan, x.Status = "enterprise", tenant.Suspended
		x.CreatedAt = time.Time{} // not the caller's to change
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "enterprise", updated.Plan)
	require.True(t, created.CreatedAt.Equal(updated.CreatedAt))
	require.False(t, updated.UpdatedAt.Before(created.UpdatedAt))
	got, err := b.reg.Get(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, tenant.Suspended, got.Status)
	require.Equal(t, "Acme Logistics", got.Name, "what the edit left alone stays")

	_, err = b.reg.Update(ctx, "acme", func(x *tenant.Tenant) error { x.From = "nobody"; return nil })
	require.EqualError(t, err, `invalid tenant: from: "nobody" is not one address like "Acme <orders@acme.example>" (mail: missing '@' or angle-addr)`)
	_, err = b.reg.Update(ctx, "acme", func(x *tenant.Tenant) error { x.ID = "acme2"; return nil })
	require.EqualError(t, err, `tenant "acme": the id cannot change (to "acme2"): create a new tenant instead`)
	refused := errors.New("not today")
	_, err = b.reg.Update(ctx, "acme", func(x *tenant.Tenant) error { x.Plan = "free"; return refused })
	require.ErrorIs(t, err, refused)
	got, err = b.reg.Get(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, "enterprise", got.Plan, "a refused update writes nothing")

	_, err = b.reg.Update(ctx, "nobody", func(*tenant.Tenant) error { return nil })
	require.ErrorIs(t, err, tenant.ErrNotFound)
}

// Two operators editing one tenant at once each get their change in: the
// loser of the race reads the winner's write and edits that.
func TestUpdateRetriesOnConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	_, err := b.reg.Create(ctx, valid())
	require.NoError(t, err)

	calls := 0
	_, err = b.reg.Update(ctx, "acme", func(x *tenant.Tenant) error {
		calls++
		if calls == 1 { // another writer slips in between the read and the write
			_, err := b.reg.Update(ctx, "acme", func(y *tenant.Tenant) error { y.Plan = "enterprise"; return nil })
			require.NoError(t, err)
		}
		x.Status = tenant.Suspended
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, calls, "the edit ran again on the fresh read")
	got, err := b.reg.Get(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, "enterprise", got.Plan, "the other writer's change survives")
	require.Equal(t, tenant.Suspended, got.Status)

	// Four at once: each loses at most three times (once to each other
	// writer), within Update's tries.
	var wg sync.WaitGroup
	providers := []string{"p0", "p1", "p2", "p3"}
	errs := make([]error, len(providers))
	for i, p := range providers {
		wg.Go(func() {
			_, errs[i] = b.reg.Update(ctx, "acme", func(x *tenant.Tenant) error {
				x.Providers = append(x.Providers, p)
				return nil
			})
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	got, err = b.reg.Get(ctx, "acme")
	require.NoError(t, err)
	require.ElementsMatch(t, append(valid().Providers, providers...), got.Providers, "no concurrent edit was lost")
}

// A writer that keeps losing gives up with ErrConflict, not forever.
func TestUpdateGivesUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	_, err := b.reg.Create(ctx, valid())
	require.NoError(t, err)
	kv, err := b.n.JS.KeyValue(ctx, tenant.Bucket)
	require.NoError(t, err)

	_, err = b.reg.Update(ctx, "acme", func(x *tenant.Tenant) error {
		entry, err := kv.Get(ctx, "acme")
		require.NoError(t, err)
		_, err = kv.Put(ctx, "acme", entry.Value()) // always someone faster
		require.NoError(t, err)
		x.Plan = "free"
		return nil
	})
	require.ErrorIs(t, err, tenant.ErrConflict)
	require.EqualError(t, err, `tenant "acme" is being changed by others too often to update`)
}
