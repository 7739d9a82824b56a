package dlq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, heraldtest.LeakOptions...)
}

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

func (b *bundle) service(t *testing.T, sweep dlq.SweepConfig, locker dlq.Locker) *dlq.Service {
	t.Helper()
	sweep.Interval = -1 // the test calls Sweep itself
	svc, err := dlq.New(b.nats.JS, dlq.Config{Sweep: sweep, Locker: locker})
	require.NoError(t, err)
	require.NoError(t, svc.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	return svc
}

// failed records n notifications as failed-but-retryable, updated at.
func (b *bundle) failed(t *testing.T, n int, resends int) {
	t.Helper()
	ctx := heraldtest.Context(t)
	for i := range n {
		key := fmt.Sprintf("acme:PO-%d:1:purchase_order:email:olga@zarya.example", i)
		d := notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: event.ChannelEmail,
			Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: "olga@zarya.example"}, Template: "purchase_order"}
		body, err := json.Marshal(d)
		require.NoError(t, err)
		e, err := b.ledger.Get(ctx, "acme", key)
		require.NoError(t, err)
		e.State, e.Retryable, e.Reason, e.Delivery, e.Resends = ledger.Failed, true, "gave up after 10 tries", body, resends
		e.Order, e.Document, e.Recipient = fmt.Sprintf("PO-%d", i), "purchase_order", "olga@zarya.example"
		require.NoError(t, b.ledger.Put(ctx, &e))
	}
}

func (b *bundle) notify(t *testing.T) []*jetstream.RawStreamMsg {
	t.Helper()
	return heraldtest.StreamMessages(t, b.nats.JS, "NOTIFY")
}

func TestSweepResendsRetryableFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.failed(t, 3, 0)
	svc := b.service(t, dlq.SweepConfig{MinAge: time.Nanosecond, Limit: 2}, nil)
	ctx := heraldtest.Context(t)

	n, err := svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "at most Limit per sweep")
	n, err = svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the rest next time; the resent ones are retrying now")
	msgs := b.notify(t)
	require.Len(t, msgs, 3)
	for _, m := range msgs {
		d, err := notification.Decode(m.Data)
		require.NoError(t, err)
		require.Equal(t, d.DedupeKey+":resend:1", m.Header.Get(jetstream.MsgIDHeader))
		e, err := b.ledger.Get(ctx, "acme", d.DedupeKey)
		require.NoError(t, err)
		require.Equal(t, ledger.Retrying, e.State)
		require.Equal(t, 1, e.Resends)
		require.Equal(t, []string{strings.Split(d.DedupeKey, ":")[1], "purchase_order", "olga@zarya.example"},
			[]string{e.Order, e.Document, e.Recipient}, "still says what the notification is")
	}
}

func TestSweepRespectsAgeAndMaxResends(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.failed(t, 1, 3)
	svc := b.service(t, dlq.SweepConfig{MinAge: time.Nanosecond, MaxResends: 3}, nil)
	n, err := svc.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Zero(t, n, "resent enough already")

	b2 := setup(t)
	b2.failed(t, 1, 0)
	svc2 := b2.service(t, dlq.SweepConfig{MinAge: time.Hour}, nil)
	n, err = svc2.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Zero(t, n, "too recent")
}

func TestOneSweeperAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.failed(t, 5, 0)
	locker := heraldtest.Locker(t)
	svc := b.service(t, dlq.SweepConfig{MinAge: time.Nanosecond}, locker)
	lease, err := locker.Acquire(heraldtest.Context(t), "sweep", time.Minute)
	require.NoError(t, err)
	n, err := svc.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Zero(t, n, "another replica is sweeping")
	require.NoError(t, lease.Release(heraldtest.Context(t)))
	n, err = svc.Sweep(heraldtest.Context(t))
	require.NoError(t, err)
	require.Equal(t, 5, n)
}
