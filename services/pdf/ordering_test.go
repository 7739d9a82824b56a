package pdf_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/services/pdf/render"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/ordering"
)

// orderedBundle is a renderer whose given-up requests settle their
// ordered deliveries, on the sequences the router registers them in.
type orderedBundle struct {
	*bundle
	rdb    *redis.Client
	prefix string
	seq    *ordering.Redis
}

// setupOrdered starts the renderer with sequences, its consumer giving a
// request maxDeliver tries.
func setupOrdered(t *testing.T, r pdf.Renderer, maxDeliver int) *orderedBundle {
	t.Helper()
	o := &orderedBundle{bundle: &bundle{nats: heraldtest.StartNATSWithStreams(t)}, prefix: heraldtest.Prefix()}
	o.rdb = heraldtest.RedisClient(t, heraldtest.RedisURL(t))
	o.seq = ordering.New(o.rdb, o.prefix)
	ctx := heraldtest.Context(t)
	store, err := documents.Open(ctx, o.nats.JS)
	require.NoError(t, err)
	o.store = &watchedStore{Store: store, js: o.nats.JS}
	c, err := o.nats.JS.Consumer(ctx, pdf.Stream, pdf.Durable)
	require.NoError(t, err)
	cfg := c.CachedInfo().Config
	cfg.MaxDeliver = maxDeliver
	_, err = o.nats.JS.UpdateConsumer(ctx, pdf.Stream, cfg)
	require.NoError(t, err)
	svc, err := pdf.New(o.nats.JS, pdf.Config{Renderer: r, Store: o.store, RetryDelay: 50 * time.Millisecond, Sequences: o.seq})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	return o
}

// deliver starts an email delivery worker on the same sequences, sending
// through the real ses provider to a fake SES.
func (o *orderedBundle) deliver(t *testing.T) *sestest.Server {
	t.Helper()
	fake := sestest.New(t)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	p, err := ses.New(context.Background(), ses.Config{
		Region: "eu-west-1", Endpoint: fake.URL(), HTTPClient: &http.Client{Transport: tr},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
	require.NoError(t, err)
	ch, err := email.NewChannel(email.ChannelConfig{From: "Orders <orders@acme.example>", Providers: []email.Named{{Name: "ses", Provider: p}}})
	require.NoError(t, err)
	svc, err := delivery.New(o.nats.JS, delivery.Config{Channel: ch, Locker: heraldtest.Locker(t), Sequences: o.seq,
		Concurrency: 2, RetryDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	return fake
}

// revision is the render request of revision rev of the example order,
// waiting to send it to Olga by email on an ordered route.
func revision(t *testing.T, rev int) documents.Request {
	t.Helper()
	req := request(t)
	order := req.Order.ID
	req.Object = documents.ObjectName("acme", order, notification.PurchaseOrder, rev)
	key := notification.Key{Tenant: "acme", Subject: order, Revision: rev, Document: notification.PurchaseOrder,
		Channel: event.ChannelEmail, Recipient: "olga@zarya.example"}.String()
	d := req.Deliveries[0]
	d.ID, d.DedupeKey, d.Document = notification.ID(key), key, &notification.Document{Type: notification.PurchaseOrder, Object: req.Object}
	d.Order = &notification.OrderSummary{ID: order, Revision: rev, Currency: "EUR", Totals: event.Totals{Gross: "1.00"}}
	d.Sequence = &notification.Sequence{Key: notification.SequenceKey("acme", order, event.ChannelEmail, "olga@zarya.example")}
	req.Deliveries = []notification.Delivery{d}
	return req
}

// register registers each request's delivery in its sequence, in this
// order, as the router does before publishing.
func (o *orderedBundle) register(t *testing.T, reqs ...*documents.Request) {
	t.Helper()
	for _, r := range reqs {
		d := &r.Deliveries[0]
		ahead, err := o.seq.Register(heraldtest.Context(t), []ordering.Slot{{Sequence: d.Sequence.Key, Member: d.DedupeKey, Revision: d.Order.Revision}})
		require.NoError(t, err)
		d.Sequence.Behind = ahead[0]
	}
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

// failingFor fails the renders of one document, each only once gate is
// closed; it renders every other for real.
type failingFor struct {
	object string
	gate   chan struct{}
	err    error
}

func (f *failingFor) Render(ctx context.Context, req documents.Request) ([]byte, error) {
	if req.Object != f.object {
		return pdf.Maroto{}.Render(ctx, req)
	}
	select {
	case <-f.gate:
	case <-time.After(30 * time.Second):
	}
	return nil, f.err
}

// The case: revision 1's document is never rendered while
// revision 2, an edit with its own document, is rendered and parked behind
// it. Giving revision 1 up settles it in the sequence: revision 2 is sent,
// and its history says what let it go.
func TestRevisionWhoseDocumentIsNotRenderedReleasesTheNext(t *testing.T) {
	t.Parallel()
	r1, r2 := revision(t, 1), revision(t, 2)
	f := &failingFor{object: r1.Object, gate: make(chan struct{}), err: errors.New("renderer out of memory")}
	o := setupOrdered(t, f, 2) // given up at its second try
	fake := o.deliver(t)
	o.register(t, &r1, &r2)
	require.True(t, r2.Deliveries[0].Sequence.Behind)
	o.submit(t, r1)
	o.submit(t, r2)
	waiting := fmt.Sprintf("held behind revision 1 (notification %s)", r1.Deliveries[0].ID)
	require.Eventually(t, func() bool { return o.entry(t, r2.Deliveries[0]).Reason == waiting }, 60*time.Second, 10*time.Millisecond, waiting)
	close(f.gate)

	// Revision 1 is settled before its request is dead-lettered: nothing
	// holds revision 2 any more (a probe that parks nothing then).
	require.Eventually(t, func() bool { return len(o.messages(t, "DLQ")) == 1 }, 60*time.Second, 10*time.Millisecond)
	d2 := r2.Deliveries[0]
	_, held, err := o.seq.Park(heraldtest.Context(t), d2.Sequence.Key, d2.DedupeKey, []byte("probe"))
	require.NoError(t, err)
	require.False(t, held, "revision 1 settled")
	require.Eventually(t, func() bool { return o.entry(t, r2.Deliveries[0]).State == ledger.Delivered }, 60*time.Second, 10*time.Millisecond,
		"revision 2 is sent once revision 1 is given up")
	e := o.entry(t, r2.Deliveries[0])
	require.Equal(t, "released: revision 1 failed: its document was not rendered", e.Attempts[len(e.Attempts)-1].Note)
	require.Len(t, fake.Received(), 1, "revision 1 is never sent")
	require.Equal(t, r2.Deliveries[0].ID, fake.Received()[0].Tags[ses.TagNotificationID])
	dlq := o.messages(t, "DLQ")
	require.Len(t, dlq, 1, "revision 1's render request, once")
	require.Contains(t, dlq[0].Header.Get(deadletter.HeaderReason), "render failed after 2 tries")
}

// A render given up whose deliveries are in no sequence settles nothing:
// a revision registered after it finds nothing settled, and the request is
// dead-lettered at once, not retried.
func TestRenderGivenUpWithoutSequencesSettlesNothing(t *testing.T) {
	t.Parallel()
	r1 := revision(t, 1)
	f := &failingFor{object: r1.Object, gate: make(chan struct{}), err: &render.InputError{Problems: []string{"no font has ☃"}}}
	close(f.gate)
	o := setupOrdered(t, f, 2)
	unordered := r1
	unordered.Deliveries = []notification.Delivery{r1.Deliveries[0]}
	unordered.Deliveries[0].Sequence = nil
	o.submit(t, unordered)

	require.Eventually(t, func() bool { return len(o.messages(t, "DLQ")) == 1 }, 60*time.Second, 10*time.Millisecond)
	require.Equal(t, "1", o.messages(t, "DLQ")[0].Header.Get(deadletter.HeaderDeliveries), "not retried")
	r2 := revision(t, 2)
	o.register(t, &r1, &r2)
	require.True(t, r2.Deliveries[0].Sequence.Behind, "revision 1 was not settled by the unordered request")
	require.Empty(t, o.messages(t, "NOTIFY"))
}

// Without sequences (no Redis configured), an ordered delivery's render
// given up is dead-lettered as any other.
func TestRenderGivenUpWithoutRedisIsDeadLettered(t *testing.T) {
	t.Parallel()
	r1 := revision(t, 1)
	f := &failingFor{object: r1.Object, gate: make(chan struct{}), err: &render.InputError{Problems: []string{"no font has ☃"}}}
	close(f.gate)
	b := setup(t, f, nil)
	b.submit(t, r1)
	require.Eventually(t, func() bool { return len(b.messages(t, "DLQ")) == 1 }, 60*time.Second, 10*time.Millisecond)
	require.Equal(t, "1", b.messages(t, "DLQ")[0].Header.Get(deadletter.HeaderDeliveries))
}

// A release that fails is not lost: revision 1's request, given up while
// its sequence cannot be settled, is retried rather than dead-lettered,
// and the try after Redis answers again releases revision 2.
func TestFailedReleaseRetriesTheRequest(t *testing.T) {
	t.Parallel()
	r1, r2 := revision(t, 1), revision(t, 2)
	f := &failingFor{object: r1.Object, gate: make(chan struct{}), err: &render.InputError{Problems: []string{"no font has ☃"}}}
	close(f.gate)
	o := setupOrdered(t, f, 100) // tries enough to outlast the fault
	ctx := heraldtest.Context(t)
	o.register(t, &r1, &r2)
	parked := r2.Deliveries[0]
	parked.Document = &notification.Document{Type: notification.PurchaseOrder, Object: r2.Object, SHA256: strings.Repeat("0", 64)}
	data, err := json.Marshal(parked)
	require.NoError(t, err)
	_, held, err := o.seq.Park(ctx, parked.Sequence.Key, parked.DedupeKey, data)
	require.NoError(t, err)
	require.True(t, held)
	// Redis answers WRONGTYPE for the sequence's settled set: Settle fails.
	settled := o.prefix + "order:{" + parked.Sequence.Key + "}:settled"
	require.NoError(t, o.rdb.Set(ctx, settled, "not a set", 0).Err())

	o.submit(t, r1)
	c, err := o.nats.JS.Consumer(ctx, pdf.Stream, pdf.Durable)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := c.Info(ctx)
		require.NoError(t, err)
		return info.NumRedelivered > 0 || len(o.messages(t, "DLQ")) > 0
	}, 60*time.Second, 10*time.Millisecond)
	require.Empty(t, o.messages(t, "DLQ"), "retried, not dead-lettered")
	require.Empty(t, o.messages(t, "STATUS"), "not told it failed yet")

	require.NoError(t, o.rdb.Del(ctx, settled).Err())
	require.Eventually(t, func() bool { return len(o.messages(t, "NOTIFY")) == 1 }, 60*time.Second, 10*time.Millisecond,
		"revision 2 released")
	m := o.messages(t, "NOTIFY")[0]
	require.Equal(t, "released: revision 1 failed: its document was not rendered", m.Header.Get(ordering.HeaderReleased))
	require.Equal(t, "released:"+parked.DedupeKey+":"+r1.Deliveries[0].ID, m.Header.Get(jetstream.MsgIDHeader))
	require.Eventually(t, func() bool { return len(o.messages(t, "DLQ")) == 1 }, 60*time.Second, 10*time.Millisecond)
	require.Len(t, o.messages(t, "STATUS"), 1)
}

// On the request's last try a release that fails cannot be retried: the
// request is dead-lettered, its reason saying the release failed too, so
// that replaying it is known to release the order's next revisions.
func TestReleaseFailingOnTheLastTryIsInTheDeadLettersReason(t *testing.T) {
	t.Parallel()
	r1 := revision(t, 1)
	f := &failingFor{object: r1.Object, gate: make(chan struct{}), err: &render.InputError{Problems: []string{"no font has ☃"}}}
	close(f.gate)
	o := setupOrdered(t, f, 1)
	ctx := heraldtest.Context(t)
	o.register(t, &r1)
	d := r1.Deliveries[0]
	require.NoError(t, o.rdb.Set(ctx, o.prefix+"order:{"+d.Sequence.Key+"}:settled", "not a set", 0).Err())
	o.submit(t, r1)

	require.Eventually(t, func() bool { return len(o.messages(t, "DLQ")) == 1 }, 60*time.Second, 10*time.Millisecond)
	reason := o.messages(t, "DLQ")[0].Header.Get(deadletter.HeaderReason)
	require.Contains(t, reason, "no font has ☃")
	require.Contains(t, reason, "releasing the order's next revision after "+d.ID)
}

// A request forged by one tenant, its delivery naming another tenant's
// sequence, settles nothing there: the other tenant's revision 2 stays
// parked behind its revision 1.
func TestForgedRequestSettlesNoOtherTenantsRevisions(t *testing.T) {
	t.Parallel()
	r1 := revision(t, 1)
	f := &failingFor{object: r1.Object, gate: make(chan struct{}), err: &render.InputError{Problems: []string{"no font has ☃"}}}
	close(f.gate)
	o := setupOrdered(t, f, 2)
	ctx := heraldtest.Context(t)
	theirs := notification.SequenceKey("globex", "PO-9", event.ChannelEmail, "olga@zarya.example")
	ahead, err := o.seq.Register(ctx, []ordering.Slot{{Sequence: theirs, Member: "globex-r1", Revision: 1}, {Sequence: theirs, Member: "globex-r2", Revision: 2}})
	require.NoError(t, err)
	require.Equal(t, []bool{false, true}, ahead)
	_, held, err := o.seq.Park(ctx, theirs, "globex-r2", []byte("globex's revision 2"))
	require.NoError(t, err)
	require.True(t, held)

	r1.Deliveries[0].Sequence.Key, r1.Deliveries[0].DedupeKey = theirs, "globex-r1"
	o.submit(t, r1)
	require.Eventually(t, func() bool { return len(o.messages(t, "DLQ")) == 1 }, 60*time.Second, 10*time.Millisecond)
	h, held, err := o.seq.Park(ctx, theirs, "globex-r2", []byte("globex's revision 2"))
	require.NoError(t, err)
	require.True(t, held, "globex's revision 1 is still pending")
	require.Equal(t, ordering.Holder{Member: "globex-r1", Revision: 1}, h)
}
