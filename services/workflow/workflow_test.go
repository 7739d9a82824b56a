package workflow_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// reminder is issue 34's purchase-order workflow with waits of wait: the
// order to the supplier by email, a reminder by WhatsApp if the supplier
// has not confirmed, then an email to the buyer; the order's cancellation
// ends it all. Its notifications carry no document, so they go straight to
// NOTIFY, where the test counts them.
func reminder(wait time.Duration) router.Route {
	w := &router.WaitStep{For: router.Duration(wait), UntilEvent: "order.confirmed"}
	return router.Route{Event: "order.created", Kind: event.KindPurchase, Template: "purchase_order", Roles: []string{"supplier"},
		Channels: []event.Channel{event.ChannelEmail},
		CancelOn: []string{"order.cancelled"},
		Steps: []router.Step{
			{Send: &router.SendStep{Channels: []event.Channel{event.ChannelEmail}}},
			{Wait: w},
			{Send: &router.SendStep{Channels: []event.Channel{event.ChannelWhatsApp}, Template: "po_reminder"}},
			{Wait: w},
			{Send: &router.SendStep{Roles: []string{"buyer"}, Channels: []event.Channel{event.ChannelEmail}, Template: "po_unconfirmed"}},
		}}
}

type bundle struct {
	n    *heraldtest.NATS
	runs jetstream.KeyValue
}

// setup starts a router with the route and the workflow service on a
// fresh server.
func setup(t *testing.T, route router.Route) bundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	r, err := router.New(n.JS, router.Config{Routes: []router.Route{route},
		Channels: []event.Channel{event.ChannelEmail, event.ChannelWhatsApp}})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })
	w, err := workflow.New(n.JS, workflow.Config{})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Stop(heraldtest.Context(t))) })
	runs, err := n.JS.KeyValue(ctx, workflow.Bucket)
	require.NoError(t, err)
	return bundle{n: n, runs: runs}
}

// publish publishes the example purchase order as an event of type typ.
func (b bundle) publish(t *testing.T, typ, id string) {
	t.Helper()
	raw, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(raw, &ev))
	ev["type"], ev["id"] = typ, id
	body, err := json.Marshal(ev)
	require.NoError(t, err)
	subject, err := event.Subject(typ)
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Data = body
	_, err = b.n.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

// sent are the deliveries NOTIFY holds: channel and address.
func (b bundle) sent(t *testing.T) []string {
	var out []string
	for _, m := range heraldtest.StreamMessages(t, b.n.JS, "NOTIFY") {
		d, err := notification.Decode(m.Data)
		require.NoError(t, err)
		out = append(out, string(d.Channel)+" "+d.Recipient.Address+" "+d.Template)
	}
	slices.Sort(out)
	return out
}

// run is the supplier's one run.
func (b bundle) run(t *testing.T) workflow.Run {
	keys, err := b.runs.ListKeys(heraldtest.Context(t))
	require.NoError(t, err)
	var all []string
	for k := range keys.Keys() {
		all = append(all, k)
	}
	require.Len(t, all, 1, "one run: the route reaches one supplier")
	e, err := b.runs.Get(heraldtest.Context(t), all[0])
	require.NoError(t, err)
	var r workflow.Run
	require.NoError(t, json.Unmarshal(e.Value(), &r))
	return r
}

func (b bundle) eventually(t *testing.T, state workflow.State) workflow.Run {
	t.Helper()
	var r workflow.Run
	require.Eventually(t, func() bool {
		keys, _ := b.runs.ListKeys(heraldtest.Context(t))
		if keys == nil {
			return false
		}
		n := 0
		for range keys.Keys() {
			n++
		}
		if n == 0 {
			return false
		}
		r = b.run(t)
		return r.State == state
	}, 30*time.Second, 20*time.Millisecond, "the run never became %s", state)
	return r
}

const (
	first      = "email olga@zarya.example purchase_order"
	reminded   = "whatsapp +79990001122 po_reminder"
	escalation = "email compras@frutasdelsur.example po_unconfirmed"
)

// A supplier who confirms within the wait gets no reminder: the
// confirmation ends the run, and its timer is gone from RUNS.
func TestAConfirmationWithinTheWaitEndsTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t, reminder(time.Hour))
	b.publish(t, "order.created", "evt-1")
	b.eventually(t, workflow.Waiting)
	b.publish(t, "order.confirmed", "evt-2")

	r := b.eventually(t, workflow.Done)
	require.Equal(t, []string{first}, b.sent(t))
	require.Equal(t, "ended", r.Timeline[len(r.Timeline)-1].What)
	require.Contains(t, r.Timeline[len(r.Timeline)-1].Detail, "order.confirmed evt-2")
	noTimers(t, b)
}

// Without a confirmation: the order, then exactly one reminder, then
// exactly one email to the buyer.
func TestWithoutAConfirmationTheSupplierIsRemindedThenTheBuyerTold(t *testing.T) {
	t.Parallel()
	b := setup(t, reminder(time.Second))
	b.publish(t, "order.created", "evt-1")

	r := b.eventually(t, workflow.Done)
	require.Equal(t, []string{escalation, first, reminded}, b.sent(t))
	var whats []string
	for _, e := range r.Timeline {
		whats = append(whats, e.What)
	}
	require.Equal(t, []string{"started", "sent", "waiting", "woken", "sent", "waiting", "woken", "sent", "done"}, whats)
}

// The order's cancellation mid-wait ends the run: nothing more is sent,
// and the timer is purged.
func TestACancelledOrderSendsNothingMore(t *testing.T) {
	t.Parallel()
	b := setup(t, reminder(2*time.Second))
	b.publish(t, "order.created", "evt-1")
	waiting := b.eventually(t, workflow.Waiting)
	b.publish(t, "order.cancelled", "evt-3")

	r := b.eventually(t, workflow.Cancelled)
	require.Equal(t, waiting.Step, r.Step)
	require.Contains(t, r.Timeline[len(r.Timeline)-1].Detail, "order.cancelled evt-3")
	noTimers(t, b)
	require.Equal(t, []string{first}, b.sent(t))
}

// noTimers: RUNS holds no waiting step's schedule.
func noTimers(t *testing.T, b bundle) {
	t.Helper()
	for _, m := range heraldtest.StreamMessages(t, b.n.JS, router.RunsStream) {
		require.False(t, strings.HasPrefix(m.Subject, "runs.timer."), "no timer left: %s", m.Subject)
	}
}
