package pdf_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// flaky fails its first n renders, then renders for real.
type flaky struct {
	n       int32
	calls   atomic.Int32
	failing bool // fail forever
}

func (f *flaky) Render(ctx context.Context, req documents.Request) ([]byte, error) {
	if call := f.calls.Add(1); f.failing || call <= f.n {
		return nil, errors.New("renderer out of memory")
	}
	return pdf.Maroto{}.Render(ctx, req)
}

func request(t *testing.T) documents.Request {
	t.Helper()
	b, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	ev, err := event.Decode(b)
	require.NoError(t, err)
	data, err := ev.OrderData()
	require.NoError(t, err)
	req := documents.Request{
		Tenant: "acme", Type: notification.PurchaseOrder, Locale: "es", Order: data.Order, Date: ev.Time,
		Object: documents.ObjectName("acme", data.Order.ID, notification.PurchaseOrder, 1),
	}
	for _, addr := range []string{"olga@zarya.example", "compras@frutasdelsur.example"} {
		key := "acme:PO-2026-0042:1:purchase_order:email:" + addr
		req.Deliveries = append(req.Deliveries, notification.Delivery{
			ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: event.ChannelEmail, Priority: notification.PriorityNormal,
			Recipient: notification.Recipient{Address: addr}, Template: "purchase_order", Locale: "es",
			Document: &notification.Document{Type: notification.PurchaseOrder, Object: req.Object},
		})
	}
	return req
}

// watchedStore is the real store, counting what is stored and recording
// whether any delivery had reached NOTIFY when a document was stored.
// Releasing waits for NOTIFY's acks, so a release that came before the
// store is always seen.
type watchedStore struct {
	*documents.Store
	js    jetstream.JetStream
	puts  atomic.Int32
	early atomic.Bool
}

func (w *watchedStore) Put(ctx context.Context, name, docType string, pdf []byte) (notification.Document, error) {
	w.puts.Add(1)
	s, err := w.js.Stream(ctx, "NOTIFY")
	if err != nil {
		return notification.Document{}, err
	}
	if s.CachedInfo().State.Msgs > 0 {
		w.early.Store(true)
	}
	return w.Store.Put(ctx, name, docType, pdf)
}

type bundle struct {
	nats  *heraldtest.NATS
	store *watchedStore
}

func setup(t *testing.T, r pdf.Renderer, edit func(*jetstream.ConsumerConfig)) *bundle {
	t.Helper()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t)}
	ctx := heraldtest.Context(t)
	store, err := documents.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	b.store = &watchedStore{Store: store, js: b.nats.JS}
	if edit != nil {
		c, err := b.nats.JS.Consumer(ctx, pdf.Stream, pdf.Durable)
		require.NoError(t, err)
		cfg := c.CachedInfo().Config
		edit(&cfg)
		_, err = b.nats.JS.UpdateConsumer(ctx, pdf.Stream, cfg)
		require.NoError(t, err)
	}
	svc, err := pdf.New(b.nats.JS, pdf.Config{Renderer: r, Store: b.store, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	return b
}

func (b *bundle) submit(t *testing.T, req documents.Request) {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	msg := nats.NewMsg(documents.Subject(req.Type, req.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, documents.MsgID(req))
	_, err = b.nats.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

func (b *bundle) messages(t *testing.T, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	return heraldtest.StreamMessages(t, b.nats.JS, stream)
}

func TestDeliveriesAreReleasedOnlyOnceTheDocumentIsStored(t *testing.T) {
	t.Parallel()
	f := &flaky{n: 3}
	b := setup(t, f, nil)
	b.submit(t, request(t))

	require.Eventually(t, func() bool { return len(b.messages(t, "NOTIFY")) == 2 }, 60*time.Second, 20*time.Millisecond)
	require.Equal(t, int32(1), b.store.puts.Load())
	require.False(t, b.store.early.Load(), "no delivery reached NOTIFY before the document was stored")
	require.Equal(t, int32(4), f.calls.Load(), "three failed renders, then one that worked")
	require.Eventually(t, func() bool { return len(b.messages(t, "DOCS")) == 0 }, 60*time.Second, 20*time.Millisecond,
		"the request is acknowledged")

	for _, m := range b.messages(t, "NOTIFY") {
		d, err := notification.Decode(m.Data)
		require.NoError(t, err)
		require.Equal(t, "acme/PO-2026-0042/purchase_order-r1.pdf", d.Document.Object)
		require.Len(t, d.Document.SHA256, 64)
		require.Equal(t, d.DedupeKey, m.Header.Get(jetstream.MsgIDHeader))
		pdfBytes, err := b.store.Get(heraldtest.Context(t), *d.Document)
		require.NoError(t, err, "the referenced document is there, with that digest")
		require.Contains(t, heraldtest.PDFText(t, pdfBytes), "PO-2026-0042")
	}
}

func TestRerenderingARevisionIsIdempotent(t *testing.T) {
	t.Parallel()
	f := &flaky{}
	b := setup(t, f, nil)
	req := request(t)
	b.submit(t, req)
	require.Eventually(t, func() bool { return len(b.messages(t, "NOTIFY")) == 2 }, 60*time.Second, 20*time.Millisecond)

	// The same request again, past the duplicate window (another id).
	body, err := json.Marshal(req)
	require.NoError(t, err)
	msg := nats.NewMsg(documents.Subject(req.Type, req.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, "another-id")
	_, err = b.nats.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(b.messages(t, "DOCS")) == 0 }, 60*time.Second, 20*time.Millisecond)
	require.Equal(t, int32(1), f.calls.Load(), "the stored document is reused, not rendered again")
	require.Len(t, b.messages(t, "NOTIFY"), 2, "its deliveries are deduplicated by NOTIFY")
}

func TestARendererThatAlwaysFailsEndsInTheDLQ(t *testing.T) {
	t.Parallel()
	f := &flaky{failing: true}
	b := setup(t, f, func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 3 })
	b.submit(t, request(t))

	require.Eventually(t, func() bool { return len(b.messages(t, "DLQ")) == 1 }, 60*time.Second, 20*time.Millisecond)
	entry := b.messages(t, "DLQ")[0]
	require.Equal(t, "dlq.DOCS.pdf", entry.Subject)
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "render failed after 3 tries")
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "renderer out of memory")
	require.Equal(t, int32(3), f.calls.Load())
	require.Empty(t, b.messages(t, "NOTIFY"), "nothing was released")
	require.Eventually(t, func() bool { return len(b.messages(t, "DOCS")) == 0 }, 60*time.Second, 20*time.Millisecond,
		"copied to the DLQ, then terminated")

	statuses := b.messages(t, "STATUS")
	require.Len(t, statuses, 2, "each waiting notification is told it failed")
	var st notification.Status
	require.NoError(t, json.Unmarshal(statuses[0].Data, &st))
	require.Equal(t, "failed", st.State)
	require.Contains(t, st.Reason, "its document could not be rendered")
}

// A request for a document already stored — a later event adding a
// recipient to the same revision — reuses it and releases its deliveries;
// those already released are dropped by NOTIFY as duplicates.
func TestALaterRequestReleasesItsNewDeliveriesWithTheStoredDocument(t *testing.T) {
	t.Parallel()
	f := &flaky{}
	b := setup(t, f, nil)
	first := request(t)
	b.submit(t, first)
	require.Eventually(t, func() bool { return len(b.messages(t, "NOTIFY")) == 2 }, 60*time.Second, 20*time.Millisecond)

	later := request(t)
	key := "acme:PO-2026-0042:1:purchase_order:email:ventas@zarya.example"
	later.Deliveries = append(later.Deliveries, notification.Delivery{
		ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: event.ChannelEmail, Priority: notification.PriorityNormal,
		Recipient: notification.Recipient{Address: "ventas@zarya.example"}, Template: "purchase_order", Locale: "es",
		Document: &notification.Document{Type: notification.PurchaseOrder, Object: later.Object},
	})
	b.submit(t, later)
	require.Eventually(t, func() bool { return len(b.messages(t, "DOCS")) == 0 }, 60*time.Second, 20*time.Millisecond)

	released := b.messages(t, "NOTIFY")
	require.Len(t, released, 3, "the new recipient's delivery, once")
	require.Equal(t, int32(1), f.calls.Load(), "rendered once, then reused")
	require.Equal(t, int32(1), b.store.puts.Load())
	var docs []notification.Document
	for _, m := range released {
		d, err := notification.Decode(m.Data)
		require.NoError(t, err)
		docs = append(docs, *d.Document)
	}
	require.Equal(t, docs[0], docs[2], "the same stored document")
}

// together holds each render until n have started, so the parts of one
// document are rendered at the same time by different workers.
type together struct {
	n     int32
	calls atomic.Int32
	all   chan struct{}
}

func (g *together) Render(ctx context.Context, req documents.Request) ([]byte, error) {
	if g.calls.Add(1) == g.n {
		close(g.all)
	}
	select {
	case <-g.all:
	case <-time.After(30 * time.Second):
		return nil, errors.New("the other renders never started")
	}
	return pdf.Maroto{}.Render(ctx, req)
}

// The parts of a large fan-out may be rendered at once: both store the same
// bytes, and every delivery goes out referencing the one stored document.
func TestPartsRenderedAtOnceStoreAndReleaseOneDocument(t *testing.T) {
	t.Parallel()
	g := &together{n: 2, all: make(chan struct{})}
	b := setup(t, g, nil) // two workers
	req := request(t)
	for i := range req.Deliveries {
		part := req
		part.Deliveries = req.Deliveries[i : i+1]
		b.submit(t, part)
	}
	require.Eventually(t, func() bool { return len(b.messages(t, "DOCS")) == 0 }, 60*time.Second, 20*time.Millisecond)
	require.Equal(t, int32(2), g.calls.Load(), "both parts rendered, at once")
	require.Equal(t, int32(2), b.store.puts.Load())

	stored, ok, err := b.store.Lookup(heraldtest.Context(t), req.Object, req.Type)
	require.NoError(t, err)
	require.True(t, ok)
	released := b.messages(t, "NOTIFY")
	require.Len(t, released, 2)
	for _, m := range released {
		d, err := notification.Decode(m.Data)
		require.NoError(t, err)
		require.Equal(t, stored, *d.Document)
		_, err = b.store.Get(heraldtest.Context(t), *d.Document)
		require.NoError(t, err)
	}
}

// A delivery that grows past the max payload once it carries its document
// can never be released: the request is dead-lettered on its first try,
// and nothing of it reaches NOTIFY.
func TestADeliveryThatCanNeverBeReleasedIsDeadLetteredAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, &flaky{}, nil)
	req := request(t)
	big := &req.Deliveries[1]
	body, err := json.Marshal(big)
	require.NoError(t, err)
	// Just within the limit as routed; the document's digest and size
	// push it over.
	big.Recipient.Name = strings.Repeat("x", int(b.nats.Conn.MaxPayload()-documents.Headroom)-len(body)-20)
	b.submit(t, req)

	require.Eventually(t, func() bool { return len(b.messages(t, "DLQ")) == 1 }, 60*time.Second, 20*time.Millisecond)
	entry := b.messages(t, "DLQ")[0]
	require.Equal(t, "1", entry.Header.Get(deadletter.HeaderDeliveries), "not retried")
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "too large for the NATS max payload: delivery "+big.ID)
	require.Eventually(t, func() bool { return len(b.messages(t, "STATUS")) == 2 }, 60*time.Second, 20*time.Millisecond,
		"each waiting notification is told it failed")
	require.Empty(t, b.messages(t, "NOTIFY"), "none released")
}
