package delivery_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/ordering"
)

// orderedBundle is a bundle whose worker keeps orders' revisions in order,
// with the sequences the router registers them in.
type orderedBundle struct {
	*bundle
	seq *ordering.Redis
}

func setupOrdered(t *testing.T, edit func(*config)) *orderedBundle {
	t.Helper()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	o := &orderedBundle{bundle: b, seq: ordering.New(heraldtest.RedisClient(t, heraldtest.RedisURL(t)), heraldtest.Prefix())}
	b.svc = b.worker(t, b.nats.JS, func(c *config) {
		c.Sequences, c.MaxTries, c.Concurrency = o.seq, 5, 4
		if edit != nil {
			edit(c)
		}
	})
	return o
}

// revision is revision rev of order to Olga by email, as the router plans
// it for an ordered route.
func revision(order string, rev int) notification.Delivery {
	key := notification.Key{Tenant: "acme", Subject: order, Revision: rev, Document: "purchase_order",
		Channel: event.ChannelEmail, Recipient: "olga@zarya.example"}.String()
	return notification.Delivery{
		ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: event.ChannelEmail, Priority: notification.PriorityNormal,
		Recipient: notification.Recipient{Name: "Olga", Address: "olga@zarya.example"}, Template: "purchase_order", Locale: "en",
		Document: &notification.Document{Type: "purchase_order"},
		Order:    &notification.OrderSummary{ID: order, Revision: rev, Currency: "EUR", Totals: event.Totals{Gross: "1.00"}},
		Sequence: &notification.Sequence{Key: notification.SequenceKey("acme", order, event.ChannelEmail, "olga@zarya.example")},
	}
}

// route registers d in its sequence and publishes it, as the router does.
func (o *orderedBundle) route(t *testing.T, d notification.Delivery) {
	t.Helper()
	ahead, err := o.seq.Register(heraldtest.Context(t), []ordering.Slot{{Sequence: d.Sequence.Key, Member: d.DedupeKey, Revision: d.Order.Revision}})
	require.NoError(t, err)
	d.Sequence.Behind = ahead[0]
	body, err := json.Marshal(d)
	require.NoError(t, err)
	o.publishRaw(t, d.DedupeKey, body)
}

// routeTogether is two router workers routing the events of later and
// earlier in the same instant: later's registration runs first, then
// earlier's, then each publishes its own.
func (o *orderedBundle) routeTogether(t *testing.T, later, earlier notification.Delivery) {
	t.Helper()
	var aheads []bool
	for _, d := range []notification.Delivery{later, earlier} {
		ahead, err := o.seq.Register(heraldtest.Context(t), []ordering.Slot{{Sequence: d.Sequence.Key, Member: d.DedupeKey, Revision: d.Order.Revision}})
		require.NoError(t, err)
		aheads = append(aheads, ahead[0])
	}
	for i, d := range []notification.Delivery{later, earlier} {
		d.Sequence.Behind = aheads[i]
		body, err := json.Marshal(d)
		require.NoError(t, err)
		o.publishRaw(t, d.DedupeKey, body)
	}
}

// order is the notification ids SES accepted, in the order it did.
func (o *orderedBundle) order() []string {
	var ids []string
	for _, r := range o.ses.Received() {
		ids = append(ids, r.Tags[ses.TagNotificationID])
	}
	return ids
}

func (o *orderedBundle) entry(t *testing.T, d notification.Delivery) ledger.Entry {
	t.Helper()
	ctx := heraldtest.Context(t)
	l, err := ledger.Open(ctx, o.nats.JS)
	require.NoError(t, err)
	e, err := l.Get(ctx, "acme", d.DedupeKey)
	require.NoError(t, err)
	return e
}

// failing answers calls 1 to n with f, the first only once release is
// closed: revision 1 stays pending while the test publishes what follows.
func failing(release <-chan struct{}, n int, f sestest.Fault) func(call int) sestest.Fault {
	return func(call int) sestest.Fault {
		if call == 1 {
			select {
			case <-release:
			case <-time.After(30 * time.Second):
			}
		}
		return emailtest.FailFirst(n, f)(call)
	}
}

// parked waits until d's history says it is held behind the revision
// before it.
func (o *orderedBundle) parked(t *testing.T, d, before notification.Delivery) {
	t.Helper()
	want := fmt.Sprintf("held behind revision %d (notification %s)", before.Order.Revision, before.ID)
	require.Eventually(t, func() bool { return o.entry(t, d).Reason == want }, 60*time.Second, 10*time.Millisecond, want)
}

// The case: revision 1's send fails transiently three times while
// revision 2 is published; the recipient receives 1, then 2 — and 2's
// history says what held it, and what let it go.
func TestLaterRevisionWaitsForTheEarlierOneToBeSent(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t, nil)
	release := make(chan struct{})
	o.ses.Faults(failing(release, 3, sestest.ServerError))
	r1, r2 := revision("PO-1", 1), revision("PO-1", 2)
	o.route(t, r1)
	o.route(t, r2)
	o.parked(t, r2, r1)
	close(release)

	o.waitSettled(t)
	require.Equal(t, []string{r1.ID, r2.ID}, o.order(), "revision 1, then revision 2")
	require.Equal(t, 5, o.calls(), "revision 1 tried four times, revision 2 once")
	e := o.entry(t, r2)
	require.Equal(t, ledger.Delivered, e.State)
	require.Equal(t, "released: revision 1 delivered", e.Attempts[len(e.Attempts)-1].Note)
	require.Empty(t, o.dlq(t))
}

// Two revisions routed in the same instant by two router workers, the
// later registered first — nothing earlier was known to it then: it asks
// again at its send, finds the earlier one registered since, and waits
// for it. One worker takes the later first, as it was published first.
func TestRevisionsRoutedInTheSameInstantKeepTheirOrder(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t, func(c *config) { c.Concurrency = 1 })
	r1, r2 := revision("PO-1", 1), revision("PO-1", 2)
	o.routeTogether(t, r2, r1)

	o.waitSettled(t)
	require.Equal(t, []string{r1.ID, r2.ID}, o.order(), "revision 1, then revision 2")
	e := o.entry(t, r2)
	require.Equal(t, ledger.Delivered, e.State)
	require.Equal(t, "released: revision 1 delivered", e.Attempts[len(e.Attempts)-1].Note)
}

// A revision dead-lettered releases the next, which says so.
func TestDeadLetteredRevisionReleasesTheNext(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t, nil)
	release := make(chan struct{})
	o.ses.Faults(failing(release, 1, sestest.InvalidAddress))
	r1, r2 := revision("PO-1", 1), revision("PO-1", 2)
	o.route(t, r1)
	o.route(t, r2)
	o.parked(t, r2, r1)
	close(release)

	o.waitSettled(t)
	require.Equal(t, []string{r2.ID}, o.order())
	require.Len(t, o.dlq(t), 1, "revision 1 dead-lettered")
	e := o.entry(t, r2)
	require.Equal(t, "released: revision 1 dead-lettered", e.Attempts[len(e.Attempts)-1].Note)
}

// Another order's revision is never held behind this one's.
func TestOtherOrdersAreNotHeld(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t, nil)
	release := make(chan struct{})
	defer close(release)
	o.ses.Faults(func(call int) sestest.Fault {
		if call == 1 {
			return sestest.Hold(release)
		}
		return sestest.None
	})
	first := revision("PO-1", 1)
	o.route(t, first)
	require.Eventually(t, func() bool { return o.calls() == 1 }, 60*time.Second, 10*time.Millisecond, "PO-1 is being sent")
	other := revision("PO-2", 2)
	o.route(t, other)
	require.Eventually(t, func() bool { return o.entry(t, other).State == ledger.Delivered }, 60*time.Second, 10*time.Millisecond,
		"PO-2 is sent while PO-1 is under way")
	require.Equal(t, ledger.Sending, o.entry(t, first).State, "PO-1's send has not returned yet")
}

// A worker that recorded revision 1 delivered and stopped before releasing
// revision 2 leaves it parked; the copy of revision 1 that comes back
// finds it delivered and releases revision 2 then.
func TestRedeliveredCopyOfASettledRevisionReleasesTheNext(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t, nil)
	r1, r2 := revision("PO-1", 1), revision("PO-1", 2)
	ctx := heraldtest.Context(t)
	_, err := o.seq.Register(ctx, []ordering.Slot{{Sequence: r1.Sequence.Key, Member: r1.DedupeKey, Revision: 1}})
	require.NoError(t, err)
	o.route(t, r2)
	o.parked(t, r2, r1)

	l, err := ledger.Open(ctx, o.nats.JS)
	require.NoError(t, err)
	require.NoError(t, l.Put(ctx, &ledger.Entry{DedupeKey: r1.DedupeKey, NotificationID: r1.ID, Tenant: "acme", Channel: "email",
		State: ledger.Delivered, Provider: "ses", ProviderMessageID: "sent-before-the-crash"}))
	body, err := json.Marshal(r1)
	require.NoError(t, err)
	o.publishRaw(t, r1.DedupeKey, body)

	require.Eventually(t, func() bool { return o.entry(t, r2).State == ledger.Delivered }, 60*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{r2.ID}, o.order(), "revision 1 is not sent again")
	e := o.entry(t, r2)
	require.Equal(t, "released: revision 1 delivered", e.Attempts[len(e.Attempts)-1].Note)
}

// A revision the settler gives up at the consumer's last delivery — not
// the protocol, which still had tries left — releases the next too.
func TestRevisionGivenUpAtMaxDeliverReleasesTheNext(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t, nil)
	require.NoError(t, o.svc.Stop(heraldtest.Context(t)))
	o.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 2 })
	o.worker(t, o.nats.JS, func(c *config) { c.Sequences, c.MaxTries, c.Concurrency = o.seq, 10, 4 })
	release := make(chan struct{})
	o.ses.Faults(failing(release, 2, sestest.ServerError))
	r1, r2 := revision("PO-1", 1), revision("PO-1", 2)
	o.route(t, r1)
	o.route(t, r2)
	o.parked(t, r2, r1)
	close(release)

	o.waitSettled(t)
	require.Len(t, o.dlq(t), 1, "revision 1 dead-lettered at its second delivery")
	require.Equal(t, []string{r2.ID}, o.order())
	e := o.entry(t, r2)
	require.Equal(t, "released: revision 1 dead-lettered", e.Attempts[len(e.Attempts)-1].Note)
}

// A revision that falls back to its next channel is settled on this one:
// the next revision here is released, and the fallback's notification,
// on a channel whose sequence never knew it, waits for nothing.
func TestFallbackReleasesTheNextRevisionAndIsNotOrdered(t *testing.T) {
	t.Parallel()
	o := setupOrdered(t, nil)
	release := make(chan struct{})
	o.ses.Faults(failing(release, 1, sestest.InvalidAddress))
	r1, r2 := revision("PO-1", 1), revision("PO-1", 2)
	smsKey := notification.Key{Tenant: "acme", Subject: "PO-1", Revision: 1, Document: "purchase_order",
		Channel: event.ChannelSMS, Recipient: "+15550100"}.String()
	r1.Fallback = []notification.FallbackStep{{Channel: event.ChannelSMS, Address: "+15550100", DedupeKey: smsKey}}
	o.route(t, r1)
	o.route(t, r2)
	o.parked(t, r2, r1)
	close(release)

	require.Eventually(t, func() bool { return o.entry(t, r2).State == ledger.Delivered }, 60*time.Second, 10*time.Millisecond)
	e := o.entry(t, r2)
	require.Equal(t, "released: revision 1 fell back to another channel", e.Attempts[len(e.Attempts)-1].Note)
	var sms []notification.Delivery
	for _, m := range o.streamMessages(t, "NOTIFY") {
		if m.Subject == "notify.sms.normal.acme" {
			d, err := notification.Decode(m.Data)
			require.NoError(t, err)
			sms = append(sms, d)
		}
	}
	require.Len(t, sms, 1, "the fallback's notification")
	require.Nil(t, sms[0].Sequence)
}
