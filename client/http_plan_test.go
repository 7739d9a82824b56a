package client_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

// The receipt names the notifications Herald's routes plan for the event,
// as the real API answers them — the ids GET /v1/notifications/{id} finds
// — on the first post and on a replay; an event no route sends anywhere
// names none.
func TestHTTPReceiptNamesThePlannedNotifications(t *testing.T) {
	t.Parallel()
	pub := publisherWithPlan(t)
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

// publisherWithPlan is acme's publisher through Herald's real API, on a
// real NATS, planning with the router's default routes as `herald api`
// does.
func publisherWithPlan(t *testing.T) *client.HTTP {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	keys, err := apikey.Open(ctx, n.JS)
	require.NoError(t, err)
	plain, _, err := keys.Create(ctx, apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send}})
	require.NoError(t, err)
	auth, err := apikey.NewAuthenticator(keys, apikey.AuthConfig{})
	require.NoError(t, err)
	require.NoError(t, auth.Start(ctx))
	t.Cleanup(auth.Stop)
	svc, err := api.New(n.JS, api.Config{Authenticator: api.StoredKeys{Keys: auth}, Plan: router.Config{}.WithDefaults().Plan})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	pub, err := client.NewHTTP(srv.URL, plain, heraldtest.HTTPClient(t))
	require.NoError(t, err)
	return pub
}
