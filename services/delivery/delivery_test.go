package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// bundle is a NATS server with Herald's streams, a fake SES speaking the
// real wire protocol, and a delivery worker sending through the real ses
// provider: faults are injected where a misbehaving SES would put them, so
// the SDK and the provider's own classification run.
type bundle struct {
	nats   *heraldtest.NATS
	ses    *sestest.Server
	svc    *delivery.Service
	locker delivery.Locker
}

func setup(t *testing.T, concurrency int) *bundle {
	t.Helper()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	b.svc = b.worker(t, b.nats.JS, func(c *config) { c.Concurrency = concurrency })
	return b
}

// config is an email delivery's config: the protocol's and the adapter's.
type config struct {
	delivery.Config
	email.ChannelConfig
}

// newEmail is an email delivery service (not started).
func newEmail(t *testing.T, js jetstream.JetStream, cfg config) (*delivery.Service, error) {
	t.Helper()
	ch, err := email.NewChannel(cfg.ChannelConfig)
	if err != nil {
		return nil, err
	}
	cfg.Config.Channel = ch
	return delivery.New(js, cfg.Config)
}

// sesProvider is the real provider, pointed at the fake with static
// credentials, on an HTTP client of its own whose idle connections close
// with the test.
func sesProvider(t *testing.T, endpoint string) *ses.Provider {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	p, err := ses.New(context.Background(), ses.Config{
		Region: "eu-west-1", Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
	require.NoError(t, err)
	return p
}

// worker starts one more delivery worker sharing the bundle's provider and
// lock; edit adjusts its config.
func (b *bundle) worker(t *testing.T, js jetstream.JetStream, edit func(*config)) *delivery.Service {
	t.Helper()
	cfg := config{
		ChannelConfig: email.ChannelConfig{From: "Orders <orders@acme.example>", Providers: []email.Named{{Name: "ses", Provider: sesProvider(t, b.ses.URL())}}},
		Config:        delivery.Config{Locker: b.locker, Concurrency: 1, RetryDelay: 50 * time.Millisecond},
	}
	if edit != nil {
		edit(&cfg)
	}
	svc, err := newEmail(t, js, cfg)
	require.NoError(t, err)
	require.NoError(t, svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	return svc
}

// connect opens a separate NATS connection, as another process would.
func (b *bundle) connect(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(b.nats.Server.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

// editConsumer changes email-normal's settings; workers started afterwards
// see them.
func (b *bundle) editConsumer(t *testing.T, edit func(*jetstream.ConsumerConfig)) {
	t.Helper()
	ctx := heraldtest.Context(t)
	c, err := b.nats.JS.Consumer(ctx, "NOTIFY", "email-normal")
	require.NoError(t, err)
	cfg := c.CachedInfo().Config
	edit(&cfg)
	_, err = b.nats.JS.UpdateConsumer(ctx, "NOTIFY", cfg)
	require.NoError(t, err)
}

func (b *bundle) ledgerEntry(t *testing.T, n int) ledger.Entry {
	t.Helper()
	ctx := heraldtest.Context(t)
	l, err := ledger.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	e, err := l.Get(ctx, "acme", dedupeKey(n))
	require.NoError(t, err)
	return e
}

func dedupeKey(n int) string {
	return notification.Key{Tenant: "acme", Subject: fmt.Sprintf("PO-%d", n), Revision: 1, Document: "purchase_order",
		Channel: event.ChannelEmail, Recipient: "olga@zarya.example"}.String()
}

func (b *bundle) publish(t *testing.T, n int) {
	t.Helper()
	b.publishAs(t, n, dedupeKey(n))
}

// publishAs publishes delivery n with the given Nats-Msg-Id: a different id
// for the same delivery is a copy the duplicate window does not catch.
func (b *bundle) publishAs(t *testing.T, n int, msgID string) {
	t.Helper()
	body, err := json.Marshal(purchaseOrder(n, "Ольга", "ru"))
	require.NoError(t, err)
	b.publishRaw(t, msgID, body)
}

// purchaseOrder is delivery n, of order PO-<n>, to a recipient of that
// name reading locale.
func purchaseOrder(n int, name, locale string) notification.Delivery {
	key := dedupeKey(n)
	return notification.Delivery{
		ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: event.ChannelEmail, Priority: notification.PriorityNormal,
		Recipient: notification.Recipient{Name: name, Address: "olga@zarya.example"}, Template: "purchase_order", Locale: locale,
		Document: &notification.Document{Type: "purchase_order"},
		Order:    &notification.OrderSummary{ID: fmt.Sprintf("PO-%d", n), Revision: 1, Currency: "EUR", Totals: event.Totals{Gross: "1.00"}},
	}
}

func (b *bundle) publishRaw(t *testing.T, id string, body []byte) {
	t.Helper()
	msg := nats.NewMsg("notify.email.normal.acme")
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, id)
	_, err := b.nats.JS.PublishMsg(heraldtest.Context(t), msg)
	require.NoError(t, err)
}

// sent is how many messages SES accepted; calls, how many requests it got.
func (b *bundle) sent() int  { return len(b.ses.Received()) }
func (b *bundle) calls() int { return b.ses.Calls() }

func (b *bundle) notifyState(t *testing.T) (stored uint64, ackPending int) {
	t.Helper()
	ctx := heraldtest.Context(t)
	s, err := b.nats.JS.Stream(ctx, "NOTIFY")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	c, err := b.nats.JS.Consumer(ctx, "NOTIFY", "email-normal")
	require.NoError(t, err)
	return info.State.Msgs, c.CachedInfo().NumAckPending
}

// waitSettled waits until NOTIFY holds no message: every copy was
// acknowledged, or dead-lettered and terminated.
func (b *bundle) waitSettled(t *testing.T, why ...any) {
	t.Helper()
	require.Eventually(t, func() bool { stored, _ := b.notifyState(t); return stored == 0 }, 60*time.Second, 20*time.Millisecond, why...)
}

func (b *bundle) dlq(t *testing.T) []*jetstream.RawStreamMsg {
	t.Helper()
	return b.streamMessages(t, "DLQ")
}

func (b *bundle) streamMessages(t *testing.T, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	return heraldtest.StreamMessages(t, b.nats.JS, stream)
}

func TestTransientFailuresAreRetriedThenDeliveredOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	b.ses.Faults(emailtest.FailFirst(2, sestest.ServerError))
	b.publish(t, 1)

	require.Eventually(t, func() bool { return b.sent() == 1 }, 60*time.Second, 20*time.Millisecond)
	b.waitSettled(t, "a delivered message is acknowledged and leaves the work queue")
	require.Equal(t, 3, b.calls())
	require.Equal(t, 1, b.sent())
	require.Empty(t, b.dlq(t))
}

func TestPermanentFailureIsDeadLetteredWithTheProvidersWords(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	b.ses.Faults(func(int) sestest.Fault { return sestest.InvalidAddress })
	b.publish(t, 1)

	require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 }, 60*time.Second, 20*time.Millisecond)
	entry := b.dlq(t)[0]
	require.Equal(t, "dlq.NOTIFY.email-normal", entry.Subject)
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "ses: permanent: HTTP 400: BadRequestException: Illegal address")
	require.Equal(t, "notify.email.normal.acme", entry.Header.Get(deadletter.HeaderSubject))
	b.waitSettled(t, "terminated, after the copy")
	require.Equal(t, 1, b.calls(), "a permanent failure is not retried")
	require.Zero(t, b.sent())
}

func TestUnreadableDeliveryIsDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	b.publishRaw(t, "garbage", []byte(`{"id": "ntf_1"}`))
	b.publish(t, 2)

	require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 && b.sent() == 1 }, 60*time.Second, 20*time.Millisecond)
	require.Contains(t, b.dlq(t)[0].Header.Get(deadletter.HeaderReason),
		"malformed delivery: missing channel, dedupe_key, recipient.address, template, tenant")
	require.Equal(t, 1, b.calls(), "nothing was sent for the unreadable one")
}

// A send slower than AckWait must not be redelivered while it is under
// way: the worker tells the server it is still working on it (InProgress).
// The lease and the ledger would stop a redelivered copy from sending
// again, so the send count alone cannot tell; the server's delivery count
// can.
func TestSlowSendIsKeptAlive(t *testing.T) {
	t.Parallel()
	b := setup(t, 4)
	b.ses.Faults(func(int) sestest.Fault { return sestest.Timeout(2500 * time.Millisecond) })
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.AckWait, c.BackOff = time.Second, nil })
	b.worker(t, b.nats.JS, func(c *config) { c.Concurrency = 4 })

	b.publish(t, 1)
	require.Eventually(t, func() bool { return b.sent() == 1 }, 60*time.Second, 20*time.Millisecond)
	b.waitSettled(t)
	c, err := b.nats.JS.Consumer(heraldtest.Context(t), "NOTIFY", "email-normal")
	require.NoError(t, err)
	require.Equal(t, uint64(1), c.CachedInfo().Delivered.Consumer, "delivered once, never redelivered")
	require.Equal(t, 1, b.calls(), "no second worker started the same send")
}

// Stop finishes what is under way and leaves nothing hanging until AckWait.
func TestStopDrainsInFlightSends(t *testing.T) {
	t.Parallel()
	b := setup(t, 2)
	b.ses.Faults(func(int) sestest.Fault { return sestest.Timeout(300 * time.Millisecond) })
	const n = 12
	for i := range n {
		b.publish(t, i)
	}
	require.Eventually(t, func() bool { return b.calls() >= 2 }, 60*time.Second, 5*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.svc.Stop(ctx))

	sent := b.sent()
	stored, ackPending := b.notifyState(t)
	require.Equal(t, b.calls(), sent, "every send that started finished")
	// NOTIFY is a work queue: an acknowledged message leaves it. So sent +
	// stored = n says both that nothing was lost and that every finished
	// send was acknowledged before Stop returned (one that was not would
	// be counted twice).
	require.Equal(t, n, sent+int(stored), "nothing lost, and every finished send acknowledged")
	require.Less(t, sent, n, "Stop did not wait for the whole backlog")
	// What may still be ack-pending is only what the server handed out as
	// the pull drained and the client never received: it comes back after
	// AckWait. Never more than one pull's worth.
	require.LessOrEqual(t, int(ackPending), 4, "no more in transit than the pull buffer (2 × concurrency)")
}
