package workflow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

// untilRead writes the order to the supplier's inbox, waits for them to
// read it, and otherwise tells the buyer by email.
func untilRead(wait time.Duration) router.Route {
	return router.Route{Event: "order.created", Kind: event.KindPurchase, Template: "purchase_order", Roles: []string{"supplier"},
		Steps: []router.Step{
			{Send: &router.SendStep{Channels: []event.Channel{event.ChannelInbox}, Roles: []string{"supplier"}}},
			{Wait: &router.WaitStep{For: router.Duration(wait), UntilStatus: "read"}},
			{Send: &router.SendStep{Roles: []string{"buyer"}, Channels: []event.Channel{event.ChannelEmail}, Template: "po_unconfirmed"}},
		}}
}

const inboxed = "inbox u-olga purchase_order"

// setupRead is the services with the subscriber u-olga registered before
// the router starts.
func setupRead(t *testing.T, wait time.Duration) bundle {
	t.Helper()
	return setupWith(t, untilRead(wait), func(n *heraldtest.NATS) {
		ctx := heraldtest.Context(t)
		dir, err := recipient.Open(ctx, n.JS)
		require.NoError(t, err)
		_, err = dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Email: "olga@zarya.example"})
		require.NoError(t, err)
	})
}

// startRead publishes the order for the subscriber u-olga, and writes the
// inbox item its send planned as the inbox channel does.
func startRead(t *testing.T, b bundle) (inbox.Item, *inbox.Store) {
	t.Helper()
	ctx := heraldtest.Context(t)
	b.publishEdited(t, "order.created.json", func(ev map[string]any) {
		data := ev["data"].(map[string]any)
		data["recipients"] = []any{map[string]any{"role": "supplier", "subscriber": "u-olga"}, data["recipients"].([]any)[1]}
	})
	b.eventually(t, workflow.Waiting)
	b.eventuallySent(t, inboxed)
	sent := b.deliveries(t)[0]
	require.NotNil(t, sent.Run, "the send names its run: a wait follows its status")
	store, err := inbox.Open(ctx, b.n.JS)
	require.NoError(t, err)
	it, _, err := store.Add(ctx, "acme", "u-olga", inbox.Item{ID: sent.ID, Notification: sent.ID, Title: "PO-2026-0042", Run: sent.Run}, inbox.Limits{})
	require.NoError(t, err)
	return it, store
}

// The supplier reading the item ends the wait: the buyer is not told, and
// the timeline says which notification was read.
func TestReadingTheItemEndsTheWait(t *testing.T) {
	t.Parallel()
	b := setupRead(t, time.Hour)
	it, store := startRead(t, b)
	_, err := store.Mark(heraldtest.Context(t), "acme", "u-olga", it.ID, inbox.MarkRead)
	require.NoError(t, err)

	r := b.eventually(t, workflow.Done)
	require.Equal(t, 1, r.Step)
	require.Equal(t, "by notification "+it.ID+" read", r.Timeline[len(r.Timeline)-1].Detail)
	noTimers(t, b)
	b.eventuallySent(t, inboxed)
}

// Delivered is not read: the item written (the delivery service telling
// the run so) leaves the wait waiting.
func TestADeliveredItemIsNotRead(t *testing.T) {
	t.Parallel()
	b := setupRead(t, time.Hour)
	startRead(t, b)
	sent := b.deliveries(t)[0]
	b.delivered(t, sent)
	b.runsTaken(t)
	r := b.run(t)
	require.Equal(t, workflow.Waiting, r.State)
	require.Equal(t, []workflow.StepStatus{{Step: 0, State: "delivered"}}, r.Statuses)
	require.NoError(t, notification.PublishRunStatus(heraldtest.Context(t), b.n.JS, sent, "read", time.Now()))
	b.eventually(t, workflow.Done)
}

// Unread when the wait ends: the buyer is told.
func TestAnUnreadItemIsEscalated(t *testing.T) {
	t.Parallel()
	b := setupRead(t, time.Second)
	startRead(t, b)
	r := b.eventually(t, workflow.Done)
	var whats []string
	for _, e := range r.Timeline {
		whats = append(whats, e.What)
	}
	require.Equal(t, []string{"started", "sent", "waiting", "woken", "sent", "done"}, whats)
	b.eventuallySent(t, inboxed, escalation)
}
