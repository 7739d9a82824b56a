package workflow_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
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
	runs *workflow.Runs
}

// setup starts a router with the route and the workflow service on a
// fresh server.
func setup(t *testing.T, route router.Route) bundle {
	t.Helper()
	return setupWith(t, route, func(*heraldtest.NATS) {})
}

// setupWith is setup with before run on the streams before the services
// start: what the router must see at once (a subscriber).
func setupWith(t *testing.T, route router.Route, before func(*heraldtest.NATS)) bundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	before(n)
	r, err := router.New(n.JS, router.Config{Routes: []router.Route{route},
		Channels: []event.Channel{event.ChannelEmail, event.ChannelWhatsApp, event.ChannelSMS, event.ChannelInbox}})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })
	w, err := workflow.New(n.JS, workflow.Config{})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Stop(heraldtest.Context(t))) })
	runs, err := workflow.OpenRuns(ctx, n.JS)
	require.NoError(t, err)
	return bundle{n: n, runs: runs}
}

// publish publishes the example purchase order as an event of type typ.
func (b bundle) publish(t *testing.T, typ, id string) {
	t.Helper()
	b.publishEdited(t, "order.created.json", func(ev map[string]any) { ev["type"], ev["id"] = typ, id })
}

// publishEdited publishes an example event, edited.
func (b bundle) publishEdited(t *testing.T, example string, edit func(map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile("../../examples/events/" + example)
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(raw, &ev))
	edit(ev)
	typ := ev["type"].(string)
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

// eventuallySent waits until NOTIFY holds exactly want: a run's send
// step is planned by the router after the run moves past it.
func (b bundle) eventuallySent(t *testing.T, want ...string) {
	t.Helper()
	slices.Sort(want)
	var got []string
	require.Eventually(t, func() bool { got = b.sent(t); return slices.Equal(got, want) }, 30*time.Second, 20*time.Millisecond,
		"sent %v, want %v", got, want)
}

// run is the supplier's one run.
func (b bundle) run(t *testing.T) workflow.Run {
	t.Helper()
	all := b.runsNow(t)
	require.Len(t, all, 1, "one run: the route reaches one supplier")
	return all[0]
}

// told is the one run once the router's word of what each of its sends
// planned, which lands on its own time, is on its timeline.
func (b bundle) told(t *testing.T) workflow.Run {
	t.Helper()
	var r workflow.Run
	require.Eventually(t, func() bool {
		r = b.run(t)
		return !slices.ContainsFunc(r.Timeline, func(e workflow.Entry) bool { return e.What == "sent" && e.Detail == "" })
	}, 30*time.Second, 20*time.Millisecond, "the sends' notifications on the timeline")
	return r
}

func (b bundle) eventually(t *testing.T, state workflow.State) workflow.Run {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if all := b.runsNow(t); len(all) > 0 {
			if r := b.run(t); r.State == state {
				return r
			}
		}
	}
	var got []string
	for _, r := range b.runsNow(t) {
		got = append(got, fmt.Sprintf("%s at %d until %s: %+v", r.State, r.Step, r.Until, r.Timeline))
	}
	require.FailNow(t, fmt.Sprintf("the run never became %s", state), "runs: %v", got)
	return workflow.Run{}
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
	waiting := b.eventually(t, workflow.Waiting)
	timers := 0
	for _, m := range heraldtest.StreamMessages(t, b.n.JS, router.RunsStream) {
		if strings.HasPrefix(m.Subject, "runs.timer.") {
			timers++
			require.Equal(t, workflow.TimerSubject("acme", waiting.ID, 1), m.Subject)
			require.Equal(t, "runs.wake.acme", m.Header.Get("Nats-Schedule-Target"), "wakes are served ahead of starts")
			require.Equal(t, "@at "+waiting.Until.Format(time.RFC3339Nano), m.Header.Get("Nats-Schedule"))
		}
	}
	require.Equal(t, 1, timers, "one timer, on its own subject")
	b.publish(t, "order.confirmed", "evt-2")

	r := b.eventually(t, workflow.Done)
	b.eventuallySent(t, first)
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
	b.eventuallySent(t, escalation, first, reminded)
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
	b.eventuallySent(t, first)
}

// noTimers: RUNS comes to hold no waiting step's schedule. The run is
// written ended first and its timer purged after (purged first, a lost
// compare-and-set would leave a waiting run without one), so a test that
// saw the run end may look before the purge.
func noTimers(t *testing.T, b bundle) {
	t.Helper()
	left := ""
	require.Eventually(t, func() bool {
		left = ""
		for _, m := range heraldtest.StreamMessages(t, b.n.JS, router.RunsStream) {
			if strings.HasPrefix(m.Subject, "runs.timer.") {
				left = m.Subject
			}
		}
		return left == ""
	}, 10*time.Second, 10*time.Millisecond, "no timer left: %s", left)
}

// runsNow are acme's runs, by key.
func (b bundle) runsNow(t *testing.T) []workflow.Run {
	t.Helper()
	page, err := b.runs.List(heraldtest.Context(t), "acme", workflow.Filter{Limit: 100})
	require.NoError(t, err)
	return page.Runs
}

// Stock alerts throttled by SKU, one an hour: of three for one SKU and one
// for another, two are sent; the other two runs end skipped, the count on
// their timeline.
func TestAThrottledSKUIsSentOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, router.Route{Event: "inventory.low_stock", Template: "low_stock", Roles: []string{"warehouse"},
		Channels: []event.Channel{event.ChannelSMS},
		Steps: []router.Step{{Throttle: &router.ThrottleStep{Key: "{{.Stock.SKU}}", Limit: 1, Per: router.Duration(time.Hour)}},
			{Send: &router.SendStep{}}}})
	for i, sku := range []string{"MILK-1L", "MILK-1L", "KEFIR-05", "MILK-1L"} {
		b.publishEdited(t, "inventory.low_stock.json", func(ev map[string]any) {
			ev["id"] = "evt-stock-" + strconv.Itoa(i)
			ev["data"].(map[string]any)["stock"].(map[string]any)["sku"] = sku
		})
	}
	var states []string
	require.Eventually(t, func() bool {
		states = states[:0]
		for _, r := range b.runsNow(t) {
			states = append(states, string(r.State))
		}
		slices.Sort(states)
		return slices.Equal(states, []string{"done", "done", "skipped", "skipped"})
	}, 30*time.Second, 20*time.Millisecond, "states: %v", states)
	b.eventuallySent(t, "sms +34600111222 low_stock", "sms +34600111222 low_stock")
	for _, r := range b.runsNow(t) {
		if r.State == workflow.Skipped {
			last := r.Timeline[len(r.Timeline)-1]
			require.Equal(t, "skipped", last.What)
			require.Regexp(t, `throttle "MILK-1L": [23] of 1 per 1h0m0s`, last.Detail)
		}
	}
}

// A recipient whose local time is outside the window is held until it
// opens in their time zone (the subscriber's), then sent to.
func TestAWindowHoldsTheRunUntilItOpensInTheRecipientsZone(t *testing.T) {
	t.Parallel()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	opens := time.Now().In(tokyo).Add(3 * time.Second)
	b := setup(t, router.Route{Event: "order.created", Kind: event.KindPurchase, Template: "purchase_order", Roles: []string{"supplier"},
		Channels: []event.Channel{event.ChannelEmail},
		Steps: []router.Step{{Window: &router.WindowStep{From: opens.Format("15:04:05"), To: opens.Add(time.Hour).Format("15:04:05")}},
			{Send: &router.SendStep{}}}})
	dir, err := recipient.Open(heraldtest.Context(t), b.n.JS)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(heraldtest.Context(t), recipient.Subscriber{Tenant: "acme", ID: "u-kenji", Email: "kenji@zarya.example", Timezone: "Asia/Tokyo"})
	require.NoError(t, err)
	b.publishEdited(t, "order.created.json", func(ev map[string]any) {
		ev["data"].(map[string]any)["recipients"] = []any{map[string]any{"role": "supplier", "subscriber": "u-kenji"}}
	})

	held := b.eventually(t, workflow.Waiting)
	require.Empty(t, b.sent(t), "held: outside the window")
	require.Contains(t, held.Timeline[len(held.Timeline)-1].Detail, "(Asia/Tokyo)")
	require.WithinDuration(t, opens, held.Until, time.Second)
	b.eventually(t, workflow.Done)
	b.eventuallySent(t, "email kenji@zarya.example purchase_order")
}

// A timer that fires for a run that moved on — ended by the event it
// waited for — moves nothing: the run stays done, nothing more is sent.
func TestAStaleTimerMovesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, reminder(time.Hour))
	b.publish(t, "order.created", "evt-1")
	b.eventually(t, workflow.Waiting)
	b.publish(t, "order.confirmed", "evt-2")
	b.eventually(t, workflow.Done)
	done := b.told(t)

	key := "acme." + recipient.Token("PO-2026-0042") + "." + done.ID
	body, err := json.Marshal(router.RunMessage{Kind: router.RunWakeKind, Wake: &router.RunWake{Key: key, Step: 1}})
	require.NoError(t, err)
	_, err = b.n.JS.Publish(heraldtest.Context(t), router.RunsIn("acme"), body)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, b.n.JS, router.RunsStream)) == 0 },
		30*time.Second, 20*time.Millisecond, "the wake is taken")
	require.Equal(t, done.Timeline, b.run(t).Timeline, "the run did not move")
	b.eventuallySent(t, first)
}

// The event a wait is for, arriving before the wait begins, ends the wait
// at once when it does: a supplier who confirmed early is not reminded.
func TestAnEventBeforeItsWaitEndsTheWaitAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, router.Route{Event: "order.created", Kind: event.KindPurchase, Template: "purchase_order", Roles: []string{"supplier"},
		Channels: []event.Channel{event.ChannelEmail},
		Steps: []router.Step{{Wait: &router.WaitStep{For: router.Duration(2 * time.Second)}},
			{Wait: &router.WaitStep{For: router.Duration(time.Hour), UntilEvent: "order.confirmed"}}, {Send: &router.SendStep{}}}})
	b.publish(t, "order.created", "evt-1")
	b.eventually(t, workflow.Waiting)
	b.publish(t, "order.confirmed", "evt-2")

	r := b.eventually(t, workflow.Done)
	require.Equal(t, 1, r.Step)
	require.Equal(t, "order.confirmed had arrived", r.Timeline[len(r.Timeline)-1].Detail)
	require.Empty(t, b.sent(t))
}

// A second send of the same route to the same person on the same channel
// is a message of its own, not the first one's duplicate; an escalation
// that two runs reach (two suppliers) is one message to the buyer.
func TestEachSendStepIsItsOwnMessageAndAnEscalationIsOne(t *testing.T) {
	t.Parallel()
	b := setup(t, router.Route{Event: "order.created", Kind: event.KindPurchase, Template: "purchase_order", Roles: []string{"supplier"},
		Channels: []event.Channel{event.ChannelEmail},
		Steps: []router.Step{{Send: &router.SendStep{}}, {Send: &router.SendStep{}},
			{Send: &router.SendStep{Roles: []string{"buyer"}}}}})
	b.publishEdited(t, "order.created.json", func(ev map[string]any) {
		data := ev["data"].(map[string]any)
		data["recipients"] = append(data["recipients"].([]any),
			map[string]any{"role": "supplier", "email": "ivan@zarya.example", "channels": []any{"email"}})
	})
	b.eventuallySent(t, "email olga@zarya.example purchase_order", "email olga@zarya.example purchase_order",
		"email ivan@zarya.example purchase_order", "email ivan@zarya.example purchase_order",
		"email compras@frutasdelsur.example purchase_order")
}

// lowStock publishes n low-stock alerts of warehouse SEV-01, SKU-01…, each
// to the warehouse's phone and, with email, to its manager's address too.
func (b bundle) lowStock(t *testing.T, from, n int, email bool) {
	t.Helper()
	for i := from; i < from+n; i++ {
		b.publishEdited(t, "inventory.low_stock.json", func(ev map[string]any) {
			ev["id"] = "evt-stock-" + strconv.Itoa(i)
			data := ev["data"].(map[string]any)
			data["stock"].(map[string]any)["sku"] = "SKU-" + strconv.Itoa(i)
			if email {
				data["recipients"] = append(data["recipients"].([]any), map[string]any{"role": "warehouse",
					"email": "jefe@almacen.example", "channels": []string{"email"}})
			}
		})
	}
}

// digests are NOTIFY's digest deliveries: address → the SKUs each lists.
func (b bundle) digests(t *testing.T) map[string][][]string {
	out := map[string][][]string{}
	for _, m := range heraldtest.StreamMessages(t, b.n.JS, "NOTIFY") {
		d, err := notification.Decode(m.Data)
		require.NoError(t, err)
		require.Equal(t, "low_stock_digest", d.Template, "a digest's send renders the digest form of the route's template")
		require.NotNil(t, d.Digest)
		var skus []string
		for _, it := range d.Digest.Items {
			skus = append(skus, it.Stock.SKU)
		}
		require.Len(t, skus, d.Digest.Count)
		slices.Sort(skus)
		out[d.Recipient.Address] = append(out[d.Recipient.Address], skus)
	}
	return out
}

// held counts RUNS's messages whose subject begins with prefix.
func (b bundle) held(t *testing.T, prefix string) int {
	n := 0
	for _, m := range heraldtest.StreamMessages(t, b.n.JS, "RUNS") {
		if strings.HasPrefix(m.Subject, prefix) {
			n++
		}
	}
	return n
}

func digestRoute(window time.Duration, maxItems int) router.Route {
	return router.Route{Event: "inventory.low_stock", Template: "low_stock", Roles: []string{"warehouse"},
		Channels: []event.Channel{event.ChannelSMS, event.ChannelEmail},
		Steps: []router.Step{
			{Digest: &router.DigestStep{Key: "{{.Stock.Warehouse}}", Window: router.Duration(window), MaxItems: maxItems}},
			{Send: &router.SendStep{}}}}
}

// Twenty low-stock alerts of one warehouse within the window become one
// message per recipient listing all twenty SKUs; each alert's run ends
// merged into the digest's run, which sends it.
func TestTwentyAlertsOfAWarehouseBecomeOneDigestPerRecipient(t *testing.T) {
	t.Parallel()
	b := setup(t, digestRoute(3*time.Second, 50))
	b.lowStock(t, 0, 20, true)
	var want []string
	for i := range 20 {
		want = append(want, "SKU-"+strconv.Itoa(i))
	}
	slices.Sort(want)
	var got map[string][][]string
	require.Eventually(t, func() bool { got = b.digests(t); return len(got) == 2 }, 30*time.Second, 50*time.Millisecond,
		"digests: %v", got)
	// The window has closed; no second digest follows.
	require.Never(t, func() bool { return len(b.sent(t)) > 2 }, 2*time.Second, 100*time.Millisecond)
	require.Equal(t, map[string][][]string{"+34600111222": {want}, "jefe@almacen.example": {want}}, b.digests(t))
	states := map[workflow.State]int{}
	merged := 0
	for _, r := range b.runsNow(t) {
		states[r.State]++
		if last := r.Timeline[len(r.Timeline)-1]; last.What == "merged" {
			merged++
		}
	}
	require.Equal(t, map[workflow.State]int{workflow.Done: 42}, states, "40 alerts' runs and 2 digests' runs, all done")
	require.Equal(t, 40, merged)
	require.Zero(t, b.held(t, "runs.digest.")+b.held(t, "runs.flush."), "the flush took the items, and no schedule is left")
}

// A digest that reaches max_items goes at once, with exactly that many;
// the alerts after it open the next, which waits for its window.
func TestADigestThatIsFullGoesAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, digestRoute(time.Hour, 5))
	b.lowStock(t, 0, 12, false)
	var got map[string][][]string
	require.Eventually(t, func() bool { got = b.digests(t); return len(got["+34600111222"]) == 2 }, 30*time.Second,
		50*time.Millisecond, "digests: %v", got)
	for _, skus := range got["+34600111222"] {
		require.Len(t, skus, 5)
	}
	waiting := 0
	require.Eventually(t, func() bool {
		waiting = 0
		for _, r := range b.runsNow(t) {
			if r.State == workflow.Waiting {
				waiting++
			}
		}
		return waiting == 2
	}, 30*time.Second, 50*time.Millisecond, "%d runs wait in the next digest, want 2", waiting)
	require.Equal(t, 1, b.held(t, "runs.flush."), "one flush waits for the open digest")
}

// The runs' reader reads one tenant's runs: a tenant that is a wildcard
// reaches none, as one that has none.
func TestTheRunsReaderKeepsToItsTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, reminder(time.Hour))
	b.publish(t, "order.created", "evt-po-1")
	r := b.eventually(t, workflow.Waiting)
	ctx := heraldtest.Context(t)
	for _, tenant := range []string{"*", ">", "acme.*", "*.>"} {
		page, err := b.runs.List(ctx, tenant, workflow.Filter{})
		require.NoError(t, err)
		require.Empty(t, page.Runs, tenant)
		_, err = b.runs.Get(ctx, tenant, r.ID)
		require.ErrorIs(t, err, workflow.ErrNotFound, tenant)
		_, err = b.runs.Cancel(ctx, tenant, r.ID, "a test")
		require.ErrorIs(t, err, workflow.ErrNotFound, tenant)
	}
	require.Equal(t, workflow.Waiting, b.run(t).State)
}

// A run's timeline names the notifications each send step planned: the
// first send's email, by its id.
func TestARunsTimelineNamesItsNotifications(t *testing.T) {
	t.Parallel()
	b := setup(t, reminder(time.Hour))
	b.publish(t, "order.created", "evt-po-1")
	b.eventuallySent(t, first)
	email, err := notification.Decode(heraldtest.StreamMessages(t, b.n.JS, "NOTIFY")[0].Data)
	require.NoError(t, err)
	var sent []string
	require.Eventually(t, func() bool {
		sent = sent[:0]
		for _, e := range b.run(t).Timeline {
			if e.What == "sent" || e.What == "notified" {
				sent = append(sent, fmt.Sprintf("%d %s %s", e.Step, e.What, e.Detail))
			}
		}
		return len(sent) == 1 && !strings.HasSuffix(sent[0], "sent ")
	}, 30*time.Second, 20*time.Millisecond, "%v", sent)
	require.Equal(t, []string{"0 sent as " + email.ID}, sent)
}
