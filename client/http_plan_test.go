package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

// The receipt names the notifications Herald's routes plan for the event,
// as the real API answers them — the ids GET /v1/notifications/{id} finds
// — on the first post and on a replay; an event no route sends anywhere
// names none.
func TestHTTPReceiptNamesThePlannedNotifications(t *testing.T) {
	t.Parallel()
	// The router's default routes, as `herald run api` plans with them.
	b := setupHTTP(t, func(c *api.Config, n *heraldtest.NATS) { c.Planner = router.NewPlanner(n.JS, router.Config{}) })
	pub := b.publisher(t, b.key)
	d := sampleOrder(t)
	ev := client.OrderCreated(acme, d.Order, d.Recipients...)
	want := []string{
		notification.ID("acme:" + d.Order.ID + ":1:purchase_order:email:olga@zarya.example"),
		notification.ID("acme:" + d.Order.ID + ":1:purchase_order:email:compras@frutasdelsur.example"),
	}

	first, err := pub.Publish(t.Context(), ev)
	require.NoError(t, err)
	require.ElementsMatch(t, want, first.Notifications)
	again, err := pub.Publish(t.Context(), ev)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.ElementsMatch(t, want, again.Notifications, "a replay names them too")

	s := sampleStock(t)
	stock, err := pub.Publish(t.Context(), client.LowStock(acme, s.Stock, s.Recipients...))
	require.NoError(t, err)
	require.Empty(t, stock.Notifications, "no route sends a stock alert by email")
}
