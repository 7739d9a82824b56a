package router_test

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/tenant"
)

// An event on its tenant's own subject, orders.created.acme, is routed
// exactly as on orders.created: the same event published again on the
// trusted subject asks for the very same render request, which DOCS drops
// as a duplicate.
func TestAnEventOnItsTenantsSubjectRoutesAsOnTheTrustedOne(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	start(t, n, router.Config{}, nil)

	publishOn(t, n, "orders.created.acme", orderEvent(t, "evt-bound", nil))
	settled(t, n, 1)
	requests := heraldtest.StreamMessages(t, n.JS, "DOCS")
	require.Len(t, requests, 1)
	var req documents.Request
	require.NoError(t, json.Unmarshal(requests[0].Data, &req))
	require.Equal(t, "acme/PO-2026-0042/purchase_order-r1.pdf", req.Object)
	require.Len(t, req.Deliveries, 2, "the supplier's and the buyer's copy")

	publishOn(t, n, "orders.created", orderEvent(t, "evt-trusted", nil))
	settled(t, n, 2)
	require.Len(t, heraldtest.StreamMessages(t, n.JS, "DOCS"), 1, "the same render request: a duplicate")
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "DLQ"))
}

// An event naming another tenant than the subject it came on is
// dead-lettered, saying both tenants, and plans nothing: a publisher
// confined to its own subjects cannot write as another tenant.
func TestAnEventOnAnotherTenantsSubjectIsDeadLettered(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	start(t, n, router.Config{}, nil)

	publishOn(t, n, "orders.created.globex", orderEvent(t, "evt-order-as-acme", nil))
	stock, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	publishOn(t, n, "inventory.low_stock.globex", stock)

	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == 2 },
		30*time.Second, 20*time.Millisecond)
	reasons := map[string]string{}
	for _, e := range heraldtest.StreamMessages(t, n.JS, "DLQ") {
		reasons[e.Header.Get(deadletter.HeaderSubject)] = e.Header.Get(deadletter.HeaderReason)
	}
	require.Equal(t, map[string]string{
		"orders.created.globex":      `tenant mismatch: event for tenant "acme" published on orders.created.globex, tenant "globex"'s subject`,
		"inventory.low_stock.globex": `tenant mismatch: event for tenant "acme" published on inventory.low_stock.globex, tenant "globex"'s subject`,
	}, reasons)
	settled(t, n, 1)
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "DOCS"))
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "NOTIFY"))
}

// registry is the tenant registry on n, with acme registered, and a cache
// following it as the router's Config.Registry.
func registry(t *testing.T, n *heraldtest.NATS) (*tenant.Registry, *tenant.Cache) {
	t.Helper()
	ctx := heraldtest.Context(t)
	reg, err := tenant.Open(ctx, n.JS, tenant.BuiltinPlans())
	require.NoError(t, err)
	_, err = reg.Create(ctx, tenant.Tenant{ID: "acme", Plan: "startup"})
	require.NoError(t, err)
	cache, err := tenant.Watch(ctx, n.JS)
	require.NoError(t, err)
	t.Cleanup(cache.Stop)
	return reg, cache
}

// suspend suspends a tenant and waits until the cache has seen it.
func suspend(t *testing.T, reg *tenant.Registry, cache *tenant.Cache, id string) {
	t.Helper()
	_, err := reg.Update(heraldtest.Context(t), id, func(x *tenant.Tenant) error {
		x.Status = tenant.Suspended
		return nil
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return errors.Is(cache.Admit(id, true), tenant.ErrSuspended) },
		10*time.Second, 10*time.Millisecond)
}

// orderFor is the sample order event with id, for tenant.
func orderFor(t *testing.T, id, tenant string) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(orderEvent(t, id, nil), &m))
	m["tenant"] = tenant
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// dlqReasons maps each dead letter's event id to its reason.
func dlqReasons(t *testing.T, n *heraldtest.NATS) map[string]string {
	t.Helper()
	reasons := map[string]string{}
	for _, e := range heraldtest.StreamMessages(t, n.JS, "DLQ") {
		reasons[e.Header.Get(deadletter.HeaderMsgID)] = e.Header.Get(deadletter.HeaderReason)
	}
	return reasons
}

// With registration required, the registry decides: a registered, active
// tenant's event is routed; once it is suspended, its next event is
// dead-lettered saying so; an unknown tenant's event is dead-lettered as
// such. Neither is routed, nor dropped.
func TestTheRegistryAdmitsEachEventsTenant(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	reg, cache := registry(t, n)
	start(t, n, router.Config{Registry: cache, RequireRegistered: true}, nil)

	publishEvent(t, n, orderFor(t, "evt-acme-active", "acme"))
	settled(t, n, 1)
	require.Len(t, heraldtest.StreamMessages(t, n.JS, "DOCS"), 1, "acme is registered and active: routed")

	suspend(t, reg, cache, "acme")
	publishEvent(t, n, orderFor(t, "evt-acme-suspended", "acme"))
	publishEvent(t, n, orderFor(t, "evt-initech", "initech"))
	settled(t, n, 3)
	require.Equal(t, map[string]string{
		"evt-acme-suspended": `tenant "acme" is suspended`,
		"evt-initech":        `unknown tenant "initech"`,
	}, dlqReasons(t, n))
	require.Len(t, heraldtest.StreamMessages(t, n.JS, "DOCS"), 1, "nothing more routed")
}

// Without tenants.require_registered, an unregistered tenant is routed as
// before the registry; a suspended one is still refused.
func TestUnregisteredTenantsAreRoutedUnlessRegistrationIsRequired(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	reg, cache := registry(t, n)
	suspend(t, reg, cache, "acme")
	start(t, n, router.Config{Registry: cache}, nil)

	publishEvent(t, n, orderFor(t, "evt-initech", "initech"))
	publishEvent(t, n, orderFor(t, "evt-acme-suspended", "acme"))
	settled(t, n, 2)
	requests := heraldtest.StreamMessages(t, n.JS, "DOCS")
	require.Len(t, requests, 1)
	var req documents.Request
	require.NoError(t, json.Unmarshal(requests[0].Data, &req))
	require.Equal(t, "initech", req.Tenant)
	require.Equal(t, map[string]string{"evt-acme-suspended": `tenant "acme" is suspended`}, dlqReasons(t, n))
}

// A tenant's deliveries are held to its plan's max_priority: a free
// tenant's traffic is low, whatever the route says; a startup's keeps the
// route's priority.
func TestPrioritiesAreCappedByThePlan(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	reg, cache := registry(t, n)
	_, err := reg.Create(heraldtest.Context(t), tenant.Tenant{ID: "tiny", Plan: "free"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok := cache.Lookup("tiny"); return ok }, 5*time.Second, 10*time.Millisecond)
	start(t, n, router.Config{Registry: cache, Plans: tenant.BuiltinPlans()}, nil)

	publishEvent(t, n, orderFor(t, "evt-tiny", "tiny"))
	publishEvent(t, n, orderFor(t, "evt-acme", "acme"))
	settled(t, n, 2)
	priorities := map[string][]notification.Priority{}
	for _, m := range heraldtest.StreamMessages(t, n.JS, "DOCS") {
		var req documents.Request
		require.NoError(t, json.Unmarshal(m.Data, &req))
		for _, d := range req.Deliveries {
			priorities[req.Tenant] = append(priorities[req.Tenant], d.Priority)
		}
	}
	require.Equal(t, map[string][]notification.Priority{
		"tiny": {notification.PriorityLow, notification.PriorityLow},
		"acme": {notification.PriorityNormal, notification.PriorityNormal},
	}, priorities)
}
