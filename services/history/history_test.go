package history_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	svchistory "github.com/heraldhq/herald/services/history"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/streams"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

type bundle struct {
	nats   *heraldtest.NATS
	ledger *ledger.Ledger
}

func setup(t *testing.T) *bundle {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	l, err := ledger.Open(heraldtest.Context(t), n.JS)
	require.NoError(t, err)
	return &bundle{nats: n, ledger: l}
}

func openStore(t *testing.T) *history.Store {
	t.Helper()
	s, err := history.Open(heraldtest.Context(t), "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func start(t *testing.T, b *bundle, store svchistory.Store) *svchistory.Service {
	t.Helper()
	svc, err := svchistory.New(b.nats.JS, svchistory.Config{Store: store, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	return svc
}

func delivery(order, recipient string) notification.Delivery {
	key := notification.Key{Tenant: "acme", Subject: order, Revision: 1, Document: "purchase_order", Channel: "email",
		Recipient: recipient}.String()
	return notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: "email",
		Recipient: notification.Recipient{Address: recipient}, Template: "purchase_order",
		Document: &notification.Document{Type: "purchase_order"}, Order: &notification.OrderSummary{ID: order}}
}

// record writes d's ledger entry in state, as a delivery worker does.
func (b *bundle) record(t *testing.T, d notification.Delivery, state ledger.State) {
	t.Helper()
	ctx := heraldtest.Context(t)
	e, err := b.ledger.Get(ctx, d.Tenant, d.DedupeKey)
	require.NoError(t, err)
	e.NotificationID, e.Channel, e.State = d.ID, string(d.Channel), state
	e.Order, e.Document, e.Recipient = d.Order.ID, d.Document.Type, d.Recipient.Address
	if state == ledger.Delivered {
		e.Provider, e.ProviderMessageID = "ses", "ses-"+d.ID[4:12]
		e.Record(ledger.Attempt{Time: time.Now(), Provider: "ses"})
	}
	require.NoError(t, b.ledger.Put(ctx, &e))
}

func (b *bundle) accept(t *testing.T, at time.Time, ds ...notification.Delivery) {
	t.Helper()
	require.NoError(t, notification.PublishAccepted(heraldtest.Context(t), b.nats.JS, notification.AcceptedOf("evt-1", ds, at)))
}

// row waits until the index shows id in state.
func row(t *testing.T, store *history.Store, id, state string) history.Row {
	t.Helper()
	var r history.Row
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		r, err = store.Get(heraldtest.Context(t), "acme", id)
		require.NoError(c, err)
		require.Equal(c, state, r.State)
	}, 10*time.Second, 10*time.Millisecond)
	return r
}

// A notification is listed pending once created, then as the ledger says;
// the ledger's word keeps what the record of its creation knew.
func TestFollowsANotificationFromCreationToDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	store := openStore(t)
	start(t, b, store)
	created := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	olga, ivan := delivery("PO-1", "olga@zarya.example"), delivery("PO-1", "ivan@zarya.example")
	b.accept(t, created, olga, ivan)

	r := row(t, store, olga.ID, history.Pending)
	require.Equal(t, history.Row{Tenant: "acme", ID: olga.ID, Order: "PO-1", Document: "purchase_order", Channel: "email",
		Recipient: "olga@zarya.example", State: history.Pending, CreatedAt: created, UpdatedAt: created}, r)

	b.record(t, olga, ledger.Sending)
	row(t, store, olga.ID, history.Sending)
	b.record(t, olga, ledger.Delivered)
	r = row(t, store, olga.ID, history.Delivered)
	require.Equal(t, "ses", r.Provider)
	require.Equal(t, 1, r.Tries)
	require.Equal(t, created, r.CreatedAt, "created when accepted, not when claimed")
	require.Equal(t, "PO-1", r.Order)
	require.Positive(t, r.Revision)
	row(t, store, ivan.ID, history.Pending)

	page, err := store.List(heraldtest.Context(t), history.Query{Tenant: "acme", State: history.Delivered})
	require.NoError(t, err)
	require.Len(t, page.Rows, 1)
	require.Equal(t, olga.ID, page.Rows[0].ID)
}

// The index is derived: a new one, fed from the start of both feeds (the
// consumers deleted and declared again), holds every notification the
// first one held, in the same states.
func TestAnIndexIsRebuiltFromTheFeeds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	var ds []notification.Delivery
	for i := range 30 {
		ds = append(ds, delivery(fmt.Sprintf("PO-%d", i), "olga@zarya.example"))
	}
	b.accept(t, time.Now(), ds...)
	for _, d := range ds[:20] {
		b.record(t, d, ledger.Delivered)
	}
	first := openStore(t)
	svc, err := svchistory.New(b.nats.JS, svchistory.Config{Store: first})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	row(t, first, ds[19].ID, history.Delivered)
	row(t, first, ds[29].ID, history.Pending)
	require.NoError(t, svc.Stop(ctx))

	for _, stream := range []string{svchistory.LedgerStream, svchistory.StatusStream} {
		require.NoError(t, b.nats.JS.DeleteConsumer(ctx, stream, svchistory.Durable))
	}
	report, err := streams.Apply(ctx, b.nats.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	rebuilt := openStore(t)
	start(t, b, rebuilt)
	for i, d := range ds {
		want := row(t, first, d.ID, map[bool]string{true: history.Delivered, false: history.Pending}[i < 20])
		// Both feeds read, in whatever order: the same row.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			got, err := rebuilt.Get(ctx, "acme", d.ID)
			require.NoError(c, err)
			require.Equal(c, want, got)
		}, 10*time.Second, 10*time.Millisecond)
	}
}

// failing refuses its first writes, as a database restarting does.
type failing struct {
	*history.Store
	refusals atomic.Int64
}

func (f *failing) Apply(ctx context.Context, rows []history.Row) error {
	if f.refusals.Add(-1) >= 0 {
		return errors.New("connection refused")
	}
	return f.Store.Apply(ctx, rows)
}

// Changes the index refused are delivered again until it takes them:
// nothing is lost while the database is away.
func TestChangesWaitForTheIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	store := &failing{Store: openStore(t)}
	store.refusals.Store(3)
	start(t, b, store)
	d := delivery("PO-9", "olga@zarya.example")
	b.record(t, d, ledger.Delivered)
	r := row(t, store.Store, d.ID, history.Delivered)
	require.LessOrEqual(t, store.refusals.Load(), int64(-1), "the index was refused three times first")
	require.Equal(t, "PO-9", r.Order)
	require.Equal(t, "olga@zarya.example", r.Recipient)
}

// A service that cannot start (a consumer missing: streams not applied)
// says which, and leaves nothing running (TestMain checks for leaks).
func TestAFailedStartLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.nats.JS.DeleteConsumer(heraldtest.Context(t), svchistory.StatusStream, svchistory.Durable))
	svc, err := svchistory.New(b.nats.JS, svchistory.Config{Store: openStore(t)})
	require.NoError(t, err)
	require.ErrorContains(t, svc.Start(heraldtest.Context(t)), "STATUS > history")
}

// A notification the router did not plan (a preference, a reference to
// nobody) is listed as skipped with its reason, never pending: no worker
// will ever claim it.
func TestASkippedNotificationIsListedWithItsReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	store := openStore(t)
	start(t, b, store)
	at := time.Now().UTC().Truncate(time.Microsecond)
	olga := delivery("PO-2", "+79161234567")
	a := notification.AcceptedOf("evt-2", []notification.Delivery{olga}, at)
	a.Notifications[0].State, a.Notifications[0].Reason = notification.Skipped, "skipped: preference alerts.sms"
	require.NoError(t, notification.PublishAccepted(heraldtest.Context(t), b.nats.JS, a))

	r := row(t, store, olga.ID, history.Skipped)
	require.Equal(t, "skipped: preference alerts.sms", r.Reason)
	page, err := store.List(heraldtest.Context(t), history.Query{Tenant: "acme", State: history.Skipped})
	require.NoError(t, err)
	require.Len(t, page.Rows, 1, "a state one can list by")
}
