package pdf_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
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

// flaky fails its first n renders, then renders for real; it records
// whether any delivery had reached NOTIFY before each render finished.
type flaky struct {
	n       int32
	calls   atomic.Int32
	js      jetstream.JetStream
	early   atomic.Bool
	failing bool // fail forever
}

func (f *flaky) Render(ctx context.Context, req documents.Request) ([]byte, error) {
	if s, err := f.js.Stream(ctx, "NOTIFY"); err == nil && s.CachedInfo().State.Msgs > 0 {
		f.early.Store(true)
	}
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

type bundle struct {
	nats *heraldtest.NATS
}

func setup(t *testing.T, r pdf.Renderer, edit func(*jetstream.ConsumerConfig)) *bundle {
	t.Helper()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t)}
	ctx := heraldtest.Context(t)
	if edit != nil {
		c, err := b.nats.JS.Consumer(ctx, pdf.Stream, pdf.Durable)
		require.NoError(t, err)
		cfg := c.CachedInfo().Config
		edit(&cfg)
		_, err = b.nats.JS.UpdateConsumer(ctx, pdf.Stream, cfg)
		require.NoError(t, err)
	}
	svc, err := pdf.New(b.nats.JS, pdf.Config{Renderer: r, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	return b
}

func (b *bundle) submit(t *testing.T, req documents.Request) {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	msg := nats.NewMsg(documents.Subject(req.Type))
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
	f.js = b.nats.JS
	b.submit(t, request(t))

	require.Eventually(t, func() bool { return len(b.messages(t, "NOTIFY")) == 2 }, 60*time.Second, 20*time.Millisecond)
	require.False(t, f.early.Load(), "no delivery reached NOTIFY before the document existed")
	require.Equal(t, int32(4), f.calls.Load(), "three failed renders, then one that worked")
	require.Eventually(t, func() bool { return len(b.messages(t, "DOCS")) == 0 }, 60*time.Second, 20*time.Millisecond,
		"the request is acknowledged")

	store, err := documents.Open(heraldtest.Context(t), b.nats.JS)
	require.NoError(t, err)
	for _, m := range b.messages(t, "NOTIFY") {
		d, err := notification.Decode(m.Data)
		require.NoError(t, err)
		require.Equal(t, "acme/PO-2026-0042/purchase_order-r1.pdf", d.Document.Object)
		require.Len(t, d.Document.SHA256, 64)
		require.Equal(t, d.DedupeKey, m.Header.Get(jetstream.MsgIDHeader))
		pdfBytes, err := store.Get(heraldtest.Context(t), *d.Document)
		require.NoError(t, err, "the referenced document is there, with that digest")
		require.Contains(t, heraldtest.PDFText(t, pdfBytes), "PO-2026-0042")
	}
}

func TestRerenderingARevisionIsIdempotent(t *testing.T) {
	t.Parallel()
	f := &flaky{}
	b := setup(t, f, nil)
	f.js = b.nats.JS
	req := request(t)
	b.submit(t, req)
	require.Eventually(t, func() bool { return len(b.messages(t, "NOTIFY")) == 2 }, 60*time.Second, 20*time.Millisecond)

	// The same request again, past the duplicate window (another id).
	body, err := json.Marshal(req)
	require.NoError(t, err)
	msg := nats.NewMsg(documents.Subject(req.Type))
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
	f.js = b.nats.JS
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
