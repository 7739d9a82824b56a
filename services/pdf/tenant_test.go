package pdf_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

// A render request for another tenant's object is refused: nothing is
// rendered over acme's document, and no delivery is released with it.
func TestRenderRequestOutsideItsTenantIsRefused(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	svc, err := pdf.New(n.JS, pdf.Config{Renderer: pdf.Maroto{}, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	raw, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	ev, err := event.Decode(raw)
	require.NoError(t, err)
	data, err := ev.OrderData()
	require.NoError(t, err)
	// A request that would render: only its tenant is wrong.
	req := documents.Request{Tenant: "evil", Type: notification.PurchaseOrder, Locale: "en", Order: data.Order, Date: ev.Time,
		Object: documents.ObjectName("acme", "PO-1", notification.PurchaseOrder, 1)}
	body, err := json.Marshal(req)
	require.NoError(t, err)
	msg := nats.NewMsg(documents.Subject(req.Type, req.Tenant))
	msg.Data = body
	_, err = n.JS.PublishMsg(ctx, msg)
	require.NoError(t, err)

	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == 1 }, 60*time.Second, 20*time.Millisecond)
	require.Equal(t, `forged render request: object acme/PO-1/purchase_order-r1.pdf is not tenant "evil"'s`,
		heraldtest.StreamMessages(t, n.JS, "DLQ")[0].Header.Get(deadletter.HeaderReason))
	store, err := documents.Open(ctx, n.JS)
	require.NoError(t, err)
	_, stored, err := store.Lookup(ctx, req.Object, req.Type)
	require.NoError(t, err)
	require.False(t, stored, "nothing was rendered under acme's name")
}
