package delivery_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/tenant"
)

// publishFor publishes delivery n of tenant id.
func (b *bundle) publishFor(t *testing.T, id string, n int) {
	t.Helper()
	d := purchaseOrder(n, "Ольга", "ru")
	d.Tenant, d.DedupeKey = id, fmt.Sprintf("%s-%d", id, n)
	d.ID = notification.ID(d.DedupeKey)
	body, err := json.Marshal(d)
	require.NoError(t, err)
	msg := nats.NewMsg("notify.email.normal." + id)
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, d.DedupeKey)
	_, err = b.nats.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

// An enterprise tenant's plan weighs 4, a free one's 1, as the registry
// says their plans: with both
// backlogged in one priority, of the first 250 emails SES is handed the
// enterprise tenant's are about four in five — while it still has
// hundreds waiting, so the other is not merely left what it leaves.
func TestAnEnterpriseTenantIsServedFourForAFreeTenantsOne(t *testing.T) {
	t.Parallel()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	for i := range 400 {
		b.publishFor(t, "globex", i)
		if i < 200 {
			b.publishFor(t, "acme", i)
		}
	}
	ctx, plans := heraldtest.Context(t), tenant.BuiltinPlans()
	reg, err := tenant.Open(ctx, b.nats.JS, plans)
	require.NoError(t, err)
	for id, plan := range map[string]string{"globex": "enterprise", "acme": "free"} {
		_, err = reg.Create(ctx, tenant.Tenant{ID: id, Plan: plan})
		require.NoError(t, err)
	}
	cache, err := tenant.Watch(ctx, b.nats.JS)
	require.NoError(t, err)
	t.Cleanup(cache.Stop)
	b.svc = b.worker(t, b.nats.JS, func(c *config) {
		c.Fair, c.Concurrency, c.Registry = true, 2, cache
		c.TenantWeight = func(id string) int { return cache.Weight(id, plans) } // as the app sets it
	})
	b.waitEmpty(t)
	b.sentOnce(t, 600)
	globex := 0
	for _, r := range b.ses.Received()[:250] {
		if r.Tags[ses.TagTenant] == "globex" {
			globex++
		}
	}
	t.Logf("of the first 250: globex (enterprise) %d, acme (free) %d", globex, 250-globex)
	require.GreaterOrEqual(t, globex, 3*(250-globex), "the enterprise tenant's share, at least 3:1")
	require.LessOrEqual(t, globex, 5*(250-globex), "the free tenant's share, at least 1 in 6")
}
