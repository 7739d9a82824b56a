package history_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	svchistory "github.com/heraldhq/herald/services/history"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/tenant"
)

const day = 24 * time.Hour

// sweeping is a history service whose retention sweep a test runs, on a
// clock it sets, over tenants acme (history and payloads kept a day) and
// zarya (the platform's retention).
type sweeping struct {
	*bundle
	store  *history.Store
	svc    *svchistory.Service
	docs   *documents.Store
	now    atomic.Pointer[time.Time]
	reader *sdkmetric.ManualReader
}

func setupSweep(t *testing.T, indexWait time.Duration) *sweeping {
	t.Helper()
	ctx := heraldtest.Context(t)
	s := &sweeping{bundle: setup(t), store: openStore(t), reader: sdkmetric.NewManualReader()}
	reg, err := tenant.Open(ctx, s.nats.JS, tenant.BuiltinPlans())
	require.NoError(t, err)
	_, err = reg.Create(ctx, tenant.Tenant{ID: "acme", Plan: "startup",
		Retention: tenant.Retention{History: tenant.Period(day), Payloads: tenant.Period(day)}})
	require.NoError(t, err)
	_, err = reg.Create(ctx, tenant.Tenant{ID: "zarya", Plan: "startup"})
	require.NoError(t, err)
	cache, err := tenant.Watch(ctx, s.nats.JS)
	require.NoError(t, err)
	t.Cleanup(cache.Stop)
	s.docs, err = documents.Open(ctx, s.nats.JS)
	require.NoError(t, err)
	now := time.Now()
	s.now.Store(&now)
	s.svc, err = svchistory.New(s.nats.JS, svchistory.Config{Store: s.store, Registry: cache, SweepInterval: -1,
		IndexWait: indexWait, Now: func() time.Time { return *s.now.Load() },
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))})
	require.NoError(t, err)
	return s
}

func (s *sweeping) start(t *testing.T) {
	t.Helper()
	require.NoError(t, s.svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, s.svc.Stop(context.Background())) })
}

// later moves the sweep's clock by d from the real now.
func (s *sweeping) later(d time.Duration) {
	at := time.Now().Add(d)
	s.now.Store(&at)
}

// store puts a document under each name.
func (s *sweeping) storeDocs(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		_, err := s.docs.Put(heraldtest.Context(t), name, "purchase_order", []byte("%PDF-1.7 "+name))
		require.NoError(t, err)
	}
}

// stored are the names of the documents left, of those given.
func (s *sweeping) stored(t *testing.T, names ...string) []string {
	t.Helper()
	var left []string
	for _, name := range names {
		_, found, err := s.docs.Lookup(heraldtest.Context(t), name, "purchase_order")
		require.NoError(t, err)
		if found {
			left = append(left, name)
		}
	}
	return left
}

// settled writes rows as the ledger's changes do.
func (s *sweeping) settled(t *testing.T, tenantID, id, order, docType, state string) {
	t.Helper()
	at := time.Now().UTC()
	require.NoError(t, s.store.Apply(heraldtest.Context(t), []history.Row{{Tenant: tenantID, ID: id, Order: order,
		Document: docType, Channel: "email", Recipient: "olga@zarya.example", State: state, CreatedAt: at, UpdatedAt: at,
		Revision: uint64(time.Now().UnixNano())}}))
}

func (s *sweeping) has(t *testing.T, tenantID, id string) bool {
	t.Helper()
	_, err := s.store.Get(heraldtest.Context(t), tenantID, id)
	if err == nil {
		return true
	}
	require.ErrorIs(t, err, history.ErrNotFound)
	return false
}

// acme keeps its history and payloads a day: two days on, the row and the
// document of its delivered order are removed, but not the rows and
// documents of notifications still to be sent (one waiting for a worker,
// one being retried) — until they are delivered; zarya, on the platform's
// retention, keeps both.
func TestRetentionSweepRemovesWhatATenantNoLongerKeeps(t *testing.T) {
	t.Parallel()
	s := setupSweep(t, 10*time.Second)
	s.start(t)
	ctx := heraldtest.Context(t)
	docs := []string{"acme/PO-1/purchase_order-r1.pdf", "acme/PO-2/purchase_order-r1.pdf", "acme/PO-3/invoice-r2.pdf",
		"zarya/PO-9/purchase_order-r1.pdf"}
	s.storeDocs(t, docs...)
	waiting := delivery("PO-2", "olga@zarya.example") // acme's, created, not yet claimed
	s.accept(t, time.Now().UTC(), waiting)
	row(t, s.store, waiting.ID, history.Pending)
	s.settled(t, "acme", "ntf_delivered", "PO-1", "purchase_order", history.Delivered)
	s.settled(t, "acme", "ntf_retried", "PO-3", "invoice", history.Retrying)
	s.settled(t, "zarya", "ntf_zarya", "PO-9", "purchase_order", history.Delivered)

	swept, err := s.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, svchistory.Swept{}, swept, "nothing is a day old yet")
	require.Equal(t, docs, s.stored(t, docs...))

	s.later(2 * day)
	swept, err = s.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, svchistory.Swept{Rows: 1, Documents: 1, Kept: 2, Events: 1}, swept, "the accepted record, indexed, is purged too")
	require.Equal(t, []string{"acme/PO-2/purchase_order-r1.pdf", "acme/PO-3/invoice-r2.pdf", "zarya/PO-9/purchase_order-r1.pdf"},
		s.stored(t, docs...))
	require.False(t, s.has(t, "acme", "ntf_delivered"))
	require.True(t, s.has(t, "acme", waiting.ID), "in flight: kept until it settles")
	require.True(t, s.has(t, "zarya", "ntf_zarya"), "the platform's retention keeps zarya's row 90 days")
	require.Equal(t, map[string]int64{"acme": 3}, heraldtest.Counts(t, s.reader, "herald.retention.removed", "tenant"))

	swept, err = s.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, svchistory.Swept{Kept: 2}, swept, "a second sweep removes nothing more")

	s.settled(t, "acme", waiting.ID, "PO-2", "purchase_order", history.Delivered)
	swept, err = s.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, svchistory.Swept{Rows: 1, Documents: 1, Kept: 1}, swept, "delivered, its row and document go")
	require.Equal(t, []string{"acme/PO-3/invoice-r2.pdf", "zarya/PO-9/purchase_order-r1.pdf"}, s.stored(t, docs...))
	require.Equal(t, map[string]int64{"history": 2, "documents": 2, "events": 1}, heraldtest.Counts(t, s.reader, "herald.retention.removed", "kind"))
}

// A document is not removed while the index has not yet read a
// notification created for it (a contact added to an old order): its
// tenant's documents wait for a sweep that finds the index current.
func TestRetentionSweepWaitsForTheIndexBeforeRemovingDocuments(t *testing.T) {
	t.Parallel()
	s := setupSweep(t, 200*time.Millisecond)
	ctx := heraldtest.Context(t)
	doc := "acme/PO-1/purchase_order-r1.pdf"
	s.storeDocs(t, doc)
	added := delivery("PO-1", "ivan@zarya.example")
	s.accept(t, time.Now().UTC(), added) // the index is not running: nobody reads it yet
	s.later(2 * day)

	swept, err := s.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, svchistory.Swept{Deferred: []string{"acme"}}, swept)
	require.Equal(t, []string{doc}, s.stored(t, doc))

	s.start(t)
	row(t, s.store, added.ID, history.Pending)
	require.Eventually(t, func() bool {
		swept, err = s.svc.Sweep(ctx)
		return err == nil && swept.Deferred == nil
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, 1, swept.Kept, "the pending notification carries it")
	require.Equal(t, []string{doc}, s.stored(t, doc))
}

// take reads every message a durable has to take, and acknowledges each,
// as the service reading it would.
func (s *sweeping) take(t *testing.T, stream, durable string) {
	t.Helper()
	ctx := heraldtest.Context(t)
	cons, err := s.nats.JS.Consumer(ctx, stream, durable)
	require.NoError(t, err)
	info := cons.CachedInfo()
	if info.NumPending == 0 {
		return
	}
	// A pinned consumer (STATUS > alerts) serves only a pull naming its
	// group; Fetch returns once it has every pending message.
	var opts []jetstream.FetchOpt
	if groups := info.Config.PriorityGroups; len(groups) > 0 {
		opts = append(opts, jetstream.FetchPriorityGroup(groups[0]))
	}
	batch, err := cons.Fetch(int(info.NumPending), opts...)
	require.NoError(t, err)
	for msg := range batch.Messages() {
		require.NoError(t, msg.DoubleAck(ctx))
	}
	require.NoError(t, batch.Error())
}

// subjects are the subjects of the messages a stream holds.
func (s *sweeping) subjects(t *testing.T, stream string) []string {
	t.Helper()
	var out []string
	for _, m := range heraldtest.StreamMessages(t, s.nats.JS, stream) {
		out = append(out, m.Subject)
	}
	return out
}

// acme's events published on subjects that name it, and its outcomes,
// are purged once older than its payload retention (a younger one stays)
// — but not before
// every consumer of their stream has taken them; zarya's, and events
// that name their tenant only in the body, stay.
func TestRetentionSweepPurgesATenantsOldEventsOnceTaken(t *testing.T) {
	t.Parallel()
	s := setupSweep(t, time.Second)
	ctx := heraldtest.Context(t)
	for _, subject := range []string{"orders.created.acme", "orders.created.zarya", "orders.created", "orders.shipped.acme",
		"inventory.low_stock.acme", "notify.status.acme", "notify.status.zarya"} {
		_, err := s.nats.JS.Publish(ctx, subject, []byte(`{}`))
		require.NoError(t, err)
	}
	cutoff := time.Now()
	_, err := s.nats.JS.Publish(ctx, "orders.updated.acme", []byte(`{}`)) // a day younger than the rest, as the clock goes
	require.NoError(t, err)
	at := cutoff.Add(day)
	s.now.Store(&at)

	swept, err := s.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, svchistory.Swept{}, swept, "the router and the status feed have not taken them yet")
	require.Len(t, s.subjects(t, "ORDERS"), 5)

	s.take(t, "ORDERS", "router")
	s.take(t, "INVENTORY", "router")
	s.take(t, "STATUS", "webhooks")
	s.take(t, "STATUS", "alerts") // the DLQ service's, for the quota thresholds
	swept, err = s.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, svchistory.Swept{Events: 4}, swept)
	require.Equal(t, []string{"orders.created.zarya", "orders.created", "orders.updated.acme"}, s.subjects(t, "ORDERS"))
	require.Empty(t, s.subjects(t, "INVENTORY"))
	require.Equal(t, []string{"notify.status.zarya"}, s.subjects(t, "STATUS"))
	require.Equal(t, map[string]int64{"events": 4}, heraldtest.Counts(t, s.reader, "herald.retention.removed", "kind"))
}
