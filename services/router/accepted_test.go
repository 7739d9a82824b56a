package router_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

// accepted are the Accepted records in STATUS.
func accepted(t *testing.T, n *heraldtest.NATS) []notification.Accepted {
	t.Helper()
	var out []notification.Accepted
	for _, m := range heraldtest.StreamMessages(t, n.JS, "STATUS") {
		require.Equal(t, "notify.accepted.acme", m.Subject)
		var a notification.Accepted
		require.NoError(t, json.Unmarshal(m.Data, &a))
		out = append(out, a)
	}
	return out
}

// Routing an order records, once, every notification it created — here
// both emails, waiting for their purchase order — so they are listed as
// pending before a worker claims them. The same order routed again
// records nothing new: STATUS drops the copy as a duplicate.
func TestARoutedEventRecordsItsNotificationsOnce(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	start(t, n, router.Config{}, nil)
	publishEvent(t, n, orderEvent(t, "evt-2026-11-30-0001", nil))
	settled(t, n, 1)

	docs := heraldtest.StreamMessages(t, n.JS, "DOCS")
	require.Len(t, docs, 1)
	var req documents.Request
	require.NoError(t, json.Unmarshal(docs[0].Data, &req))
	id := map[string]string{}
	for _, d := range req.Deliveries {
		id[d.Recipient.Address] = d.ID
	}
	records := accepted(t, n)
	require.Len(t, records, 1)
	got := records[0]
	require.Equal(t, "acme", got.Tenant)
	require.Equal(t, "evt-2026-11-30-0001", got.EventID)
	require.False(t, got.Time.IsZero())
	require.ElementsMatch(t, []notification.AcceptedNotification{
		{ID: id["olga@zarya.example"], Order: "PO-2026-0042", Document: "purchase_order", Channel: "email", Recipient: "olga@zarya.example"},
		{ID: id["compras@frutasdelsur.example"], Order: "PO-2026-0042", Document: "purchase_order", Channel: "email", Recipient: "compras@frutasdelsur.example"},
	}, got.Notifications)
	for _, a := range got.Notifications {
		require.NotEmpty(t, a.ID, a.Recipient)
	}

	publishEvent(t, n, orderEvent(t, "evt-2026-11-30-0001-again", nil))
	settled(t, n, 2)
	require.Len(t, accepted(t, n), 1, "the same notifications are recorded once")
}

// An event that creates no notification records none: a sales order has
// no supplier to tell, and a type no route mentions nobody at all.
func TestAnEventWithoutNotificationsRecordsNone(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	start(t, n, router.Config{}, nil)
	publishEvent(t, n, orderEvent(t, "evt-sales", func(data map[string]any) {
		data["order"].(map[string]any)["kind"] = "sales"
	}))
	cancelled := orderEvent(t, "evt-cancelled", nil)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(cancelled, &ev))
	ev["type"] = "order.cancelled"
	cancelled, err := json.Marshal(ev)
	require.NoError(t, err)
	publishEvent(t, n, cancelled)
	settled(t, n, 2)

	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "DOCS"))
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "STATUS"))
}
