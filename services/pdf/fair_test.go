package pdf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

// rendering records whose documents were rendered, in order.
type rendering struct {
	mu      sync.Mutex
	tenants []string
}

func (r *rendering) Render(_ context.Context, req documents.Request) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tenants = append(r.tenants, req.Tenant)
	return []byte("%PDF-1.7 " + req.Object), nil
}

func (r *rendering) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.tenants)
}

func publishRender(t *testing.T, n *heraldtest.NATS, subject string, req documents.Request) {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Data = body
	_, err = n.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

func renderRequest(tenant string, i int) documents.Request {
	order := fmt.Sprintf("PO-%s-%d", tenant, i)
	return documents.Request{Tenant: tenant, Type: notification.PurchaseOrder, Locale: "en",
		Object: documents.ObjectName(tenant, order, notification.PurchaseOrder, 1)}
}

// With scheduling.fair, a tenant's thousand renders do not hold up
// another's one: bulk's 30 requests wait ahead of acme's, and acme's is
// rendered among the first few. A request stored before render subjects
// named the tenant is rendered too; one published under another tenant's
// name is refused.
func TestRendersAreServedTenantByTenant(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	for i := range 30 {
		publishRender(t, n, documents.Subject(notification.PurchaseOrder, "bulk"), renderRequest("bulk", i))
	}
	publishRender(t, n, documents.Subject(notification.PurchaseOrder, "acme"), renderRequest("acme", 0))
	publishRender(t, n, "docs.render.purchase_order", renderRequest("legacy", 0))
	publishRender(t, n, documents.Subject(notification.PurchaseOrder, "evil"), renderRequest("acme", 1))

	r := &rendering{}
	svc, err := pdf.New(n.JS, pdf.Config{Renderer: r, Concurrency: 1, Fair: true, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	require.Eventually(t, func() bool { return len(r.list()) == 32 }, 30*time.Second, 10*time.Millisecond)
	got := r.list()
	require.Less(t, slices.Index(got, "acme"), 4, "acme's render was served in turn with bulk's: %v", got)
	require.Contains(t, got, "legacy", "a request from before the tenant token is rendered")
	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == 1 }, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, `forged render request: tenant "acme" published on docs.render.purchase_order.evil`,
		heraldtest.StreamMessages(t, n.JS, "DLQ")[0].Header.Get(deadletter.HeaderReason))
}
