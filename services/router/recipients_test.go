package router_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

// zarya stores acme's supplier Zarya: Olga in sales (Russian, Moscow
// time), Ivan in accounts payable, who switched off email about orders.
func zarya(t *testing.T, n *heraldtest.NATS) {
	t.Helper()
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	for _, s := range []recipient.Subscriber{
		{Tenant: "acme", ID: "u-olga", Name: "Ольга", Email: "olga@zarya.example", Locale: "ru", Timezone: "Europe/Moscow"},
		{Tenant: "acme", ID: "u-ivan", Name: "Иван", Email: "ivan@zarya.example"},
	} {
		_, err := dir.Subscribers.Put(ctx, s)
		require.NoError(t, err)
	}
	_, err = dir.PutAccount(ctx, recipient.Account{Tenant: "acme", ID: "zarya", Members: []recipient.Member{
		{Subscriber: "u-olga", Roles: []string{"sales"}}, {Subscriber: "u-ivan", Roles: []string{"accounts_payable"}}}})
	require.NoError(t, err)
	_, err = dir.SetPreferences(ctx, "acme", "u-ivan", recipient.Choices{"orders": {event.ChannelEmail: false}}, nil, true)
	require.NoError(t, err)
}

// An order that names only its supplier's account reaches the account's
// people, from the directory the router watches: Olga in Russian; Ivan's
// preference and a topic with nobody on it are recorded as skipped, with
// why, and counted — nothing is dropped unseen.
func TestAnOrderNamingAnAccountReachesItsPeople(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	zarya(t, n)
	reader := sdkmetric.NewManualReader()
	start(t, n, router.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Routes: []router.Route{{Event: "order.created", Document: "purchase_order", Roles: []string{"supplier", "warehouse"},
			Channels: []event.Channel{event.ChannelEmail}, Category: "orders"}}}, nil)

	publishEvent(t, n, orderEvent(t, "evt-account", func(data map[string]any) {
		data["order"].(map[string]any)["supplier"].(map[string]any)["account"] = "zarya"
		data["recipients"] = []any{map[string]any{"role": "warehouse", "topic": "sevilla"}}
	}))
	settled(t, n, 1)

	docs := heraldtest.StreamMessages(t, n.JS, "DOCS")
	require.Len(t, docs, 1)
	var req documents.Request
	require.NoError(t, json.Unmarshal(docs[0].Data, &req))
	require.Len(t, req.Deliveries, 1)
	olga := req.Deliveries[0]
	require.Equal(t, notification.Recipient{Name: "Ольга", Role: "supplier", Address: "olga@zarya.example",
		Subscriber: "u-olga", Timezone: "Europe/Moscow"}, olga.Recipient)
	require.Equal(t, "ru", olga.Locale)

	records := accepted(t, n)
	require.Len(t, records, 1)
	ivanKey := notification.Key{Tenant: "acme", Subject: "PO-2026-0042", Revision: 1, Document: "purchase_order",
		Channel: event.ChannelEmail, Recipient: "ivan@zarya.example"}.String()
	topicKey := notification.Key{Tenant: "acme", Subject: "PO-2026-0042", Revision: 1, Document: "purchase_order",
		Recipient: `topic "sevilla"`}.String()
	require.ElementsMatch(t, []notification.AcceptedNotification{
		{ID: olga.ID, Order: "PO-2026-0042", Document: "purchase_order", Channel: "email", Recipient: "olga@zarya.example"},
		{ID: notification.ID(ivanKey), Order: "PO-2026-0042", Document: "purchase_order", Channel: "email",
			Recipient: "ivan@zarya.example", State: "skipped", Reason: "skipped: preference orders.email"},
		{ID: notification.ID(topicKey), Order: "PO-2026-0042", Document: "purchase_order", Recipient: `topic "sevilla"`,
			State: "skipped", Reason: `skipped: no recipient: topic "sevilla"`},
	}, records[0].Notifications)
	require.Equal(t, map[string]int64{"preference": 1, "no_recipient": 1},
		heraldtest.Counts(t, reader, "herald.router.unplanned", "reason"))
}
