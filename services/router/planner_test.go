package router

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

// The planner names what the router plans for an event naming a topic:
// each member's notification for a topic of at most FanoutPage members,
// and none for a larger one, which the router fans out afterwards a page
// at a time — the API's answer holds the ids it knows, never a guess.
func TestThePlannerNamesATopicsNotificationsUpToAPage(t *testing.T) {
	t.Parallel()
	ctx := heraldtest.Context(t)
	n := heraldtest.StartNATSWithStreams(t)
	stores, err := recipient.Open(ctx, n.JS)
	require.NoError(t, err)
	for topic, members := range map[string][]string{"small": {"u-a", "u-b"}, "big": {"u-c", "u-d", "u-e"}} {
		for _, id := range members {
			_, err = stores.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: id, Email: id + "@zarya.example"})
			require.NoError(t, err)
			_, err = stores.Memberships.Put(ctx, recipient.Membership{Tenant: "acme", Topic: topic, Subscriber: id})
			require.NoError(t, err)
		}
	}
	p := NewPlanner(n.JS, Config{FanoutPage: 2})
	require.NoError(t, p.Start(ctx))
	t.Cleanup(p.Stop)

	plan := func(topic string) []string {
		ids, err := p.Plan(ctx, nil, sampleEvent(t, withRecipients(map[string]any{"role": "supplier", "topic": topic})))
		require.NoError(t, err)
		return ids
	}
	require.ElementsMatch(t, []string{notification.ID("acme:PO-2026-0042:1:purchase_order:email:u-a@zarya.example"),
		notification.ID("acme:PO-2026-0042:1:purchase_order:email:u-b@zarya.example")}, plan("small"))
	require.Empty(t, plan("big"), "fanned out after, a page at a time")
}
