package delivery_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
)

// Copies of one delivery that the duplicate window does not catch, handed
// to several workers at once, while the send is slow: exactly one send.
func TestRacingCopiesSendOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 4)
	b.ses.Faults(func(int) sestest.Fault { return sestest.Timeout(300 * time.Millisecond) })
	for range 3 {
		_, js := b.connect(t)
		b.worker(t, js, func(c *config) { c.Concurrency = 4 })
	}
	for copy := range 8 {
		b.publishAs(t, 1, fmt.Sprintf("copy-%d", copy))
	}

	b.waitSettled(t, "every copy is acknowledged")
	require.Equal(t, 1, b.calls())
	require.Equal(t, 1, b.sent())
	e := b.ledgerEntry(t, 1)
	require.Equal(t, ledger.Delivered, e.State)
	require.Equal(t, 1, e.Tries)
}

// A send slower than AckWait, whose keep-alives cannot keep up: the message
// is redelivered to other workers while the first still sends. They find the
// lease held, come back later, and find the ledger: exactly one send.
func TestRedeliveryDuringASlowSendSendsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	b.ses.Faults(func(int) sestest.Fault { return sestest.Timeout(time.Second) })
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) {
		c.AckWait, c.BackOff = 50*time.Millisecond, nil // shorter than the 100 ms keep-alive floor
		c.MaxDeliver = -1
	})
	b.worker(t, b.nats.JS, nil)
	_, js := b.connect(t)
	b.worker(t, js, nil)

	b.publish(t, 1)
	b.waitSettled(t)
	info, err := b.nats.JS.Consumer(heraldtest.Context(t), "NOTIFY", "email-normal")
	require.NoError(t, err)
	require.Positive(t, info.CachedInfo().NumRedelivered+int(info.CachedInfo().Delivered.Consumer)-1, "the message was redelivered")
	require.Equal(t, 1, b.calls())
	require.Equal(t, 1, b.sent())
}

// crashAfterRecord kills a worker right after it wrote "delivered" to the
// ledger: its NATS and Redis connections drop, so its status event, its ack
// and its lease release never arrive — as when the process dies there.
type crashAfterRecord struct {
	delivery.Ledger
	crash   func()
	crashed atomic.Bool
}

func (c *crashAfterRecord) Put(ctx context.Context, e *ledger.Entry) error {
	err := c.Ledger.Put(ctx, e)
	if err == nil && e.State == ledger.Delivered && c.crashed.CompareAndSwap(false, true) {
		c.crash()
	}
	return err
}

func TestWorkerKilledBetweenSendAndAckDoesNotSendTwice(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.AckWait, c.BackOff = time.Second, nil })

	// The doomed worker has connections of its own.
	nc, js := b.connect(t)
	opts, err := redis.ParseURL(heraldtest.RedisURL(t))
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	prefix := heraldtest.Prefix()
	l, err := ledger.Open(heraldtest.Context(t), js)
	require.NoError(t, err)
	crashing := &crashAfterRecord{Ledger: l, crash: func() { nc.Close(); _ = rdb.Close() }}
	b.worker(t, js, func(c *config) {
		c.Ledger, c.Locker, c.LockTTL = crashing, lock.NewRedis(rdb, prefix), 2*time.Second
	})

	b.publish(t, 1)
	require.Eventually(t, crashing.crashed.Load, 60*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, b.sent(), "sent once before the crash")

	// A surviving worker on the same lock gets the redelivery.
	survivorRedis := redis.NewClient(opts)
	t.Cleanup(func() { _ = survivorRedis.Close() })
	b.worker(t, b.nats.JS, func(c *config) { c.Locker = lock.NewRedis(survivorRedis, prefix) })

	b.waitSettled(t, "the survivor acknowledges the redelivered copy")
	require.Equal(t, 1, b.calls(), "no second send")
	require.Equal(t, 1, b.sent())
}

func TestRedisDownSendsNothingUntilItIsBack(t *testing.T) {
	t.Parallel()
	srv := heraldtest.StartRedisServer(t)
	srv.Stop()
	opts, err := redis.ParseURL(srv.URL())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })

	b := setup(t, 1)
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	b.worker(t, b.nats.JS, func(c *config) { c.Locker = lock.NewRedis(rdb, "herald:lock:") })
	b.publish(t, 1)

	info, err := b.nats.JS.Consumer(heraldtest.Context(t), "NOTIFY", "email-normal")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ci, err := info.Info(heraldtest.Context(t))
		require.NoError(t, err)
		return ci.Delivered.Consumer >= 2
	}, 10*time.Second, 20*time.Millisecond, "the message is tried and put back")
	require.Zero(t, b.calls(), "never sent without the lock")
	stored, _ := b.notifyState(t)
	require.Equal(t, uint64(1), stored, "and never dropped")

	srv.Start()
	require.Eventually(t, func() bool { return b.sent() == 1 }, 60*time.Second, 50*time.Millisecond)
	require.Equal(t, 1, b.calls())
}

func TestLedgerKeepsTheAttemptsAndItsSettlingWriteIsTheOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	b.ses.Faults(emailtest.FailFirst(2, sestest.APIError(http.StatusServiceUnavailable, "ServiceUnavailable", "try later")))
	b.publish(t, 1)
	require.Eventually(t, func() bool { return b.ledgerEntry(t, 1).State == ledger.Delivered }, 60*time.Second, 20*time.Millisecond)

	e := b.ledgerEntry(t, 1)
	require.Equal(t, 3, e.Tries)
	require.Equal(t, "ses", e.Provider)
	require.Equal(t, b.ses.Received()[0].MessageID, e.ProviderMessageID)
	require.Equal(t, "ses: HTTP 503: ServiceUnavailable: try later (request id fake-request-1)", e.Attempts[0].Error)
	require.Equal(t, "ses: HTTP 503: ServiceUnavailable: try later (request id fake-request-2)", e.Attempts[1].Error)
	require.Equal(t, []uint64{1, 2, 3}, []uint64{e.Attempts[0].Delivery, e.Attempts[1].Delivery, e.Attempts[2].Delivery})
	require.Empty(t, e.Attempts[2].Error)
	require.Equal(t, []string{"PO-1", "purchase_order", "olga@zarya.example"}, []string{e.Order, e.Document, e.Recipient},
		"what the listing shows of it, without its Accepted record")

	// The write that settled it is its outcome event: told once, though the
	// ledger was written five times (claim, two retries, claim, outcome).
	outcomes := heraldtest.Outcomes(t, b.nats.JS)
	require.Len(t, outcomes, 1)
	st := outcomes[0]
	require.Equal(t, "notification.delivered", st.Type)
	require.Equal(t, "delivered", st.State)
	require.Equal(t, dedupeKey(1), st.DedupeKey)
	require.Equal(t, "purchase_order", st.Template)
	require.Equal(t, e.ProviderMessageID, st.ProviderMessageID)
	require.Equal(t, 3, st.Tries)
	require.Empty(t, b.streamMessages(t, "STATUS"), "no second write tells it")
}

func TestPermanentRefusalIsRecordedAsFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	b.ses.Faults(func(int) sestest.Fault {
		return sestest.APIError(http.StatusBadRequest, "MessageRejected", "Email address is not verified.")
	})
	b.publish(t, 1)
	require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 }, 60*time.Second, 20*time.Millisecond)
	e := b.ledgerEntry(t, 1)
	require.Equal(t, ledger.Failed, e.State)
	require.False(t, e.Retryable)
	require.Contains(t, e.Reason, "HTTP 400: MessageRejected: Email address is not verified.")
	require.Equal(t, 1, b.calls(), "no retry")
}

func TestExhaustedTriesAreRecordedAsRetryableAndDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	b.ses.Faults(func(int) sestest.Fault { return sestest.ServerError })
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	b.worker(t, b.nats.JS, func(c *config) { c.MaxTries = 3 })
	b.publish(t, 1)

	require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 }, 60*time.Second, 20*time.Millisecond)
	e := b.ledgerEntry(t, 1)
	require.Equal(t, ledger.Failed, e.State)
	require.True(t, e.Retryable)
	require.Equal(t, 3, e.Tries)
	require.Contains(t, e.Reason, "gave up after 3 tries")
	require.NotEmpty(t, e.Delivery, "kept for the resend sweep")
	entry := b.dlq(t)[0]
	require.Equal(t, "dlq.NOTIFY.email-normal", entry.Subject)
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "gave up after 3 tries: ses: HTTP 500: InternalFailure")
	b.waitSettled(t, "copied to the DLQ, then terminated")
	require.Equal(t, 3, b.calls())
}
