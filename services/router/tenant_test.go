package router_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
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
