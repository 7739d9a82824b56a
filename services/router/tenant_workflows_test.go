package router_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/resource"
)

// publishAs publishes an example event as tenant's, with id, and the
// order's id when given.
func publishAs(t *testing.T, n *heraldtest.NATS, example, tenant, id string, order ...string) {
	t.Helper()
	raw, err := os.ReadFile("../../examples/events/" + example)
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(raw, &ev))
	ev["tenant"], ev["id"] = tenant, id
	if len(order) > 0 {
		ev["data"].(map[string]any)["order"].(map[string]any)["id"] = order[0]
	}
	body, err := json.Marshal(ev)
	require.NoError(t, err)
	subject, err := event.Subject(ev["type"].(string))
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Data = body
	_, err = n.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

// runMessages are the kinds of tenant's messages to the workflow service.
func runMessages(t *testing.T, n *heraldtest.NATS, tenant string) []string {
	t.Helper()
	var kinds []string
	for _, m := range heraldtest.StreamMessages(t, n.JS, router.RunsStream) {
		if m.Subject == router.RunsIn(tenant) {
			var rm router.RunMessage
			require.NoError(t, json.Unmarshal(m.Data, &rm))
			kinds = append(kinds, rm.Kind)
		}
	}
	return kinds
}

// rendered reports whether DOCS holds a purchase order's render request
// for tenant: the configured route's.
func rendered(t *testing.T, n *heraldtest.NATS, tenant string) bool {
	t.Helper()
	for _, m := range heraldtest.StreamMessages(t, n.JS, "DOCS") {
		if m.Subject == "docs.render.purchase_order."+tenant {
			return true
		}
	}
	return false
}

// A tenant's workflow routes its events of that type and kind — a run per
// recipient, and the runs told of the events their cancel_on names — while
// another tenant's are routed by the configured routes; removing the
// workflow gives its events back to the configured routes, without a
// restart.
func TestATenantWorkflowReplacesTheConfiguredRoutesForThatTenantOnly(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	start(t, n, router.Config{}, nil)
	workflows, err := resource.Open(ctx, n.JS, router.Workflows)
	require.NoError(t, err)
	_, err = workflows.Put(ctx, router.Workflow{Tenant: "acme", Name: "po-reminder", Route: router.Route{
		Event: "order.created", Kind: event.KindPurchase, Document: "purchase_order", Roles: []string{"supplier"},
		Channels: []event.Channel{event.ChannelEmail}, CancelOn: []string{"order.cancelled"},
		Steps: []router.Step{{Send: &router.SendStep{}}, {Wait: &router.WaitStep{For: router.Duration(time.Hour)}}, {Send: &router.SendStep{}}}}})
	require.NoError(t, err)

	// The router follows the bucket: an event after the write is routed
	// by the workflow, within moments, without a restart. (Those routed
	// before it reached the router went by the configured routes.)
	publishUntil(t, n, "acme", func() bool { return len(runMessages(t, n, "acme")) > 0 })
	require.Equal(t, []string{router.RunStartKind}, runMessages(t, n, "acme"), "one run: the workflow reaches the one supplier")

	// A record that does not validate (a hand edit) is not routed by: it
	// would send with a template no channel has.
	kv, err := n.JS.KeyValue(ctx, router.WorkflowsBucket)
	require.NoError(t, err)
	_, err = kv.Put(ctx, router.WorkflowKey("globex", "bad"), []byte(`{"tenant":"globex","name":"bad","route":`+
		`{"event":"order.created","kind":"purchase","roles":["supplier"],"channels":["email"],"template":"Not Valid"}}`))
	require.NoError(t, err)
	publishAs(t, n, "order.created.json", "globex", "evt-globex-1")
	require.Eventually(t, func() bool { return rendered(t, n, "globex") }, 10*time.Second, 20*time.Millisecond,
		"globex's order is routed by the configured routes")
	require.Empty(t, runMessages(t, n, "globex"))

	publishAs(t, n, "order.cancelled.json", "acme", "evt-acme-cancelled")
	publishAs(t, n, "order.cancelled.json", "globex", "evt-globex-cancelled")
	require.Eventually(t, func() bool { return len(runMessages(t, n, "acme")) == 2 }, 10*time.Second, 20*time.Millisecond,
		"the runs are told of the event their cancel_on names")
	require.Equal(t, []string{router.RunStartKind, router.RunEventKind}, runMessages(t, n, "acme"))

	// Removed, the configured routes apply to acme's orders again.
	require.NoError(t, workflows.Delete(ctx, router.WorkflowKey("acme", "po-reminder")))
	stored := len(heraldtest.StreamMessages(t, n.JS, "DOCS"))
	publishUntil(t, n, "acme", func() bool { return len(heraldtest.StreamMessages(t, n.JS, "DOCS")) > stored })
	require.Empty(t, runMessages(t, n, "globex"), "globex's events never reached a run")
}

// publishUntil publishes tenant's purchase orders, each its own event
// and order (so that no render request is a duplicate of one before),
// until done: what a change of the tenant's workflows makes of the next.
func publishUntil(t *testing.T, n *heraldtest.NATS, tenant string, done func() bool) {
	t.Helper()
	for i := 0; ; i++ {
		require.Less(t, i, 30, "the change never reached the router")
		id := fmt.Sprintf("%s-%d-%d", tenant, time.Now().UnixNano(), i)
		publishAs(t, n, "order.created.json", tenant, "evt-"+id, "PO-"+id)
		for range 50 {
			if done() {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// A workflow is validated as a configured route is, and beyond: its
// name is one key token, and it never carries the router's own stage.
func TestAWorkflowValidatesAsARoute(t *testing.T) {
	t.Parallel()
	ok := router.Route{Event: "order.created", Document: "purchase_order", Channels: []event.Channel{event.ChannelEmail}}
	require.NoError(t, router.Workflow{Tenant: "acme", Name: "po_1-a", Route: ok}.Validate())
	staged := ok
	staged.Stage = 2
	for w, says := range map[*router.Workflow]string{
		{Tenant: "acme", Name: "a.b", Route: ok}:    `name "a.b" must be 1-64 letters`,
		{Tenant: "acme", Name: "po", Route: staged}: "stage is the router's",
		{Tenant: "acme", Name: "po", Route: router.Route{Event: "order.created", Document: "purchase_order",
			Channels: []event.Channel{"e\x1bmail"}}}: "workflow.channels: holds a control character (U+001B at byte 1)",
		{Tenant: "acme", Name: "po", Route: router.Route{Event: "order.created", Channels: []event.Channel{event.ChannelEmail}}}: "workflow.template:",
	} {
		err := w.Validate()
		require.ErrorIs(t, err, router.ErrInvalidWorkflow)
		require.ErrorContains(t, err, says)
	}
}
