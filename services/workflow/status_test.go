package workflow_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

// untilDelivered sends the order by WhatsApp, falling back to email, waits
// for it to be delivered (before is a wait taken first, if any), and
// otherwise reminds the supplier by email.
func untilDelivered(wait time.Duration, before ...router.Step) router.Route {
	steps := append([]router.Step{{Send: &router.SendStep{Fallback: []event.Channel{event.ChannelWhatsApp, event.ChannelEmail}}}},
		before...)
	steps = append(steps, router.Step{Wait: &router.WaitStep{For: router.Duration(wait), UntilStatus: "delivered"}},
		router.Step{Send: &router.SendStep{Channels: []event.Channel{event.ChannelEmail}, Template: "po_reminder"}})
	return router.Route{Event: "order.created", Kind: event.KindPurchase, Template: "purchase_order", Roles: []string{"supplier"},
		Channels: []event.Channel{event.ChannelEmail}, Steps: steps}
}

// deliveries are the notifications NOTIFY holds.
func (b bundle) deliveries(t *testing.T) []notification.Delivery {
	t.Helper()
	var out []notification.Delivery
	for _, m := range heraldtest.StreamMessages(t, b.n.JS, "NOTIFY") {
		d, err := notification.Decode(m.Data)
		require.NoError(t, err)
		out = append(out, d)
	}
	return out
}

// delivered tells the run what the delivery service tells it when d is
// delivered.
func (b bundle) delivered(t *testing.T, d notification.Delivery) {
	t.Helper()
	require.NoError(t, notification.PublishRunStatus(heraldtest.Context(t), b.n.JS, d, "delivered", time.Now()))
}

// runsTaken waits until RUNS holds nothing but timers: the workflow
// service took every message on runs.in.
func (b bundle) runsTaken(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, m := range heraldtest.StreamMessages(t, b.n.JS, router.RunsStream) {
			if !strings.HasPrefix(m.Subject, "runs.timer.") {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the run's messages are taken")
}

// The order delivered within the wait ends the run: no reminder, and the
// wait's timer is gone. The send's notification names its run and step.
func TestADeliveredNotificationEndsItsWait(t *testing.T) {
	t.Parallel()
	b := setup(t, untilDelivered(time.Hour))
	b.publish(t, "order.created", "evt-1")
	waiting := b.eventually(t, workflow.Waiting)
	b.eventuallySent(t, "whatsapp +79990001122 purchase_order")
	sent := b.deliveries(t)[0]
	key := workflow.Key("acme", "PO-2026-0042", waiting.ID)
	require.Equal(t, &notification.RunRef{Key: key, Step: 0}, sent.Run)

	// Another step's notification delivered is not the one it waits for.
	other := sent
	other.ID, other.Run = "ntf_other", &notification.RunRef{Key: key, Step: 2}
	b.delivered(t, other)
	b.runsTaken(t)
	still := b.run(t)
	require.Equal(t, workflow.Waiting, still.State)
	require.Equal(t, []workflow.StepStatus{{Step: 2, State: "delivered"}}, still.Statuses)

	b.delivered(t, sent)
	r := b.eventually(t, workflow.Done)
	require.Equal(t, 1, r.Step)
	require.Equal(t, "ended", r.Timeline[len(r.Timeline)-1].What)
	require.Equal(t, "by notification "+sent.ID+" delivered", r.Timeline[len(r.Timeline)-1].Detail)
	noTimers(t, b)
	b.eventuallySent(t, "whatsapp +79990001122 purchase_order")
}

// A notification that fell back to another channel and was delivered
// there ends the wait too: the fallback's notification names the run.
func TestAFallbacksDeliveredNotificationEndsTheWait(t *testing.T) {
	t.Parallel()
	b := setup(t, untilDelivered(time.Hour))
	b.publish(t, "order.created", "evt-1")
	b.eventually(t, workflow.Waiting)
	b.eventuallySent(t, "whatsapp +79990001122 purchase_order")
	fallback, ok := b.deliveries(t)[0].Next("whatsapp refused it")
	require.True(t, ok)
	require.Equal(t, event.ChannelEmail, fallback.Channel)

	b.delivered(t, fallback)
	r := b.eventually(t, workflow.Done)
	require.Equal(t, "by notification "+fallback.ID+" delivered", r.Timeline[len(r.Timeline)-1].Detail)
	noTimers(t, b)
}

// A notification delivered before the run reaches its wait (a fast
// provider, here while an earlier wait holds the run) is remembered: the
// wait ends at once when it begins, and no reminder is sent.
func TestAStatusBeforeItsWaitEndsTheWaitAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, untilDelivered(time.Hour, router.Step{Wait: &router.WaitStep{For: router.Duration(2 * time.Second)}}))
	b.publish(t, "order.created", "evt-1")
	held := b.eventually(t, workflow.Waiting)
	require.Equal(t, 1, held.Step, "the first wait")
	b.eventuallySent(t, "whatsapp +79990001122 purchase_order")
	b.delivered(t, b.deliveries(t)[0])

	r := b.eventually(t, workflow.Done)
	require.Equal(t, 2, r.Step)
	require.Equal(t, "step 0's notification had been delivered", r.Timeline[len(r.Timeline)-1].Detail)
	require.Equal(t, []workflow.StepStatus{{Step: 0, State: "delivered"}}, r.Statuses)
	noTimers(t, b)
	b.eventuallySent(t, "whatsapp +79990001122 purchase_order")
}

// A status for a run that has ended, or that does not exist, moves
// nothing and is not a failure: taken, not dead-lettered.
func TestAStatusForNoLiveRunIsDropped(t *testing.T) {
	t.Parallel()
	b := setup(t, untilDelivered(time.Hour))
	b.publish(t, "order.created", "evt-1")
	b.eventually(t, workflow.Waiting)
	b.eventuallySent(t, "whatsapp +79990001122 purchase_order")
	sent := b.deliveries(t)[0]
	b.delivered(t, sent)
	b.eventually(t, workflow.Done)
	done := b.told(t)

	late, _ := sent.Next("a late copy")
	gone := sent
	gone.ID, gone.Run = "ntf_gone", &notification.RunRef{Key: "acme.UE8tMQ.run_gone", Step: 0}
	b.delivered(t, late)
	b.delivered(t, gone)
	b.runsTaken(t)
	after := b.run(t)
	require.Equal(t, done.Timeline, after.Timeline, "the run did not move")
	require.Empty(t, after.Statuses, "nor remembered a status")
	require.Empty(t, heraldtest.StreamMessages(t, b.n.JS, "DLQ"))
}

// The sends of a run that waits for no status name no run: nobody is
// told of their status.
func TestASendNoWaitWatchesNamesNoRun(t *testing.T) {
	t.Parallel()
	b := setup(t, reminder(time.Hour))
	b.publish(t, "order.created", "evt-1")
	b.eventually(t, workflow.Waiting)
	b.eventuallySent(t, first)
	require.Nil(t, b.deliveries(t)[0].Run)
	raw, err := json.Marshal(b.deliveries(t)[0])
	require.NoError(t, err)
	require.NotContains(t, string(raw), `"run"`)
}
