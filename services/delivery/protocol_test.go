package delivery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
)

// Copies of one delivery that the duplicate window does not catch, handed
// to several workers at once, while the send is slow: exactly one send.
func TestRacingCopiesSendOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, &faulty{delay: 300 * time.Millisecond}, 4)
	for range 3 {
		_, js := b.connect(t)
		b.worker(t, js, func(c *delivery.Config) { c.Concurrency = 4 })
	}
	for copy := range 8 {
		b.publishAs(t, 1, fmt.Sprintf("copy-%d", copy))
	}

	require.Eventually(t, func() bool { stored, _ := b.notifyState(t); return stored == 0 }, 60*time.Second, 20*time.Millisecond,
		"every copy is acknowledged")
	require.Equal(t, int32(1), b.faulty.calls.Load())
	require.Equal(t, 1, b.mailCount(t))
	e := b.ledgerEntry(t, 1)
	require.Equal(t, ledger.Delivered, e.State)
	require.Equal(t, 1, e.Tries)
}

// A send slower than AckWait, whose keep-alives cannot keep up: the message
// is redelivered to other workers while the first still sends. They find the
// lease held, come back later, and find the ledger: exactly one send.
func TestRedeliveryDuringASlowSendSendsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, &faulty{delay: time.Second}, 1)
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) {
		c.AckWait, c.BackOff = 50*time.Millisecond, nil // shorter than the 100 ms keep-alive floor
		c.MaxDeliver = -1
	})
	b.worker(t, b.nats.JS, nil)
	_, js := b.connect(t)
	b.worker(t, js, nil)

	b.publish(t, 1)
	require.Eventually(t, func() bool { stored, _ := b.notifyState(t); return stored == 0 }, 60*time.Second, 20*time.Millisecond)
	info, err := b.nats.JS.Consumer(heraldtest.Context(t), "NOTIFY", "email-normal")
	require.NoError(t, err)
	require.Positive(t, info.CachedInfo().NumRedelivered+int(info.CachedInfo().Delivered.Consumer)-1, "the message was redelivered")
	require.Equal(t, int32(1), b.faulty.calls.Load())
	require.Equal(t, 1, b.mailCount(t))
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
	b := setup(t, &faulty{}, 1)
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
	b.worker(t, js, func(c *delivery.Config) {
		c.Ledger, c.Locker, c.LockTTL = crashing, lock.NewRedis(rdb, prefix), 2*time.Second
	})

	b.publish(t, 1)
	require.Eventually(t, crashing.crashed.Load, 60*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, b.mailCount(t), "sent once before the crash")

	// A surviving worker on the same lock gets the redelivery.
	survivorRedis := redis.NewClient(opts)
	t.Cleanup(func() { _ = survivorRedis.Close() })
	b.worker(t, b.nats.JS, func(c *delivery.Config) { c.Locker = lock.NewRedis(survivorRedis, prefix) })

	require.Eventually(t, func() bool { stored, _ := b.notifyState(t); return stored == 0 }, 60*time.Second, 20*time.Millisecond,
		"the survivor acknowledges the redelivered copy")
	require.Equal(t, int32(1), b.faulty.calls.Load(), "no second send")
	require.Equal(t, 1, b.mailCount(t))
}

func TestRedisDownSendsNothingUntilItIsBack(t *testing.T) {
	t.Parallel()
	r, err := embedded.StartRedis("127.0.0.1:0")
	require.NoError(t, err)
	addr := r.URL()
	r.Close()
	opts, err := redis.ParseURL(addr)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })

	b := setup(t, &faulty{}, 1)
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	b.worker(t, b.nats.JS, func(c *delivery.Config) { c.Locker = lock.NewRedis(rdb, "herald:lock:") })
	b.publish(t, 1)

	info, err := b.nats.JS.Consumer(heraldtest.Context(t), "NOTIFY", "email-normal")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ci, err := info.Info(heraldtest.Context(t))
		require.NoError(t, err)
		return ci.Delivered.Consumer >= 2
	}, 10*time.Second, 20*time.Millisecond, "the message is tried and put back")
	require.Zero(t, b.faulty.calls.Load(), "never sent without the lock")
	stored, _ := b.notifyState(t)
	require.Equal(t, uint64(1), stored, "and never dropped")

	back, err := embedded.StartRedis(opts.Addr)
	require.NoError(t, err)
	t.Cleanup(back.Close)
	require.Eventually(t, func() bool { return b.mailCount(t) == 1 }, 60*time.Second, 50*time.Millisecond)
	require.Equal(t, int32(1), b.faulty.calls.Load())
}

func TestLedgerKeepsTheAttemptsAndStatusIsPublished(t *testing.T) {
	t.Parallel()
	b := setup(t, &faulty{fail: func(call int) error {
		if call <= 2 {
			return &email.TransientError{Err: fmt.Errorf("HTTP 503: try %d", call)}
		}
		return nil
	}}, 1)
	b.publish(t, 1)
	require.Eventually(t, func() bool { return b.ledgerEntry(t, 1).State == ledger.Delivered }, 60*time.Second, 20*time.Millisecond)

	e := b.ledgerEntry(t, 1)
	require.Equal(t, 3, e.Tries)
	require.Equal(t, "faulty", e.Provider)
	require.NotEmpty(t, e.ProviderMessageID)
	require.Equal(t, "faulty: HTTP 503: try 1", e.Attempts[0].Error)
	require.Equal(t, "faulty: HTTP 503: try 2", e.Attempts[1].Error)
	require.Equal(t, []uint64{1, 2, 3}, []uint64{e.Attempts[0].Delivery, e.Attempts[1].Delivery, e.Attempts[2].Delivery})
	require.Empty(t, e.Attempts[2].Error)

	require.Eventually(t, func() bool { return len(b.streamMessages(t, "STATUS")) == 1 }, 60*time.Second, 20*time.Millisecond)
	var st notification.Status
	require.NoError(t, json.Unmarshal(b.streamMessages(t, "STATUS")[0].Data, &st))
	require.Equal(t, "delivered", st.State)
	require.Equal(t, dedupeKey(1), st.DedupeKey)
	require.Equal(t, 3, st.Tries)
}

func TestPermanentRefusalIsRecordedAsFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, &faulty{fail: func(int) error { return email.Permanentf("HTTP 400: Illegal address") }}, 1)
	b.publish(t, 1)
	require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 }, 60*time.Second, 20*time.Millisecond)
	e := b.ledgerEntry(t, 1)
	require.Equal(t, ledger.Failed, e.State)
	require.False(t, e.Retryable)
	require.Contains(t, e.Reason, "HTTP 400: Illegal address")
	require.Equal(t, int32(1), b.faulty.calls.Load(), "no retry")
}

func TestExhaustedTriesAreRecordedAsRetryableAndDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t, &faulty{fail: func(int) error { return errors.New("HTTP 503") }}, 1)
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	b.worker(t, b.nats.JS, func(c *delivery.Config) { c.MaxTries = 3 })
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
	require.Contains(t, entry.Header.Get(deadletter.HeaderReason), "gave up after 3 tries: faulty: HTTP 503")
	require.Eventually(t, func() bool { stored, _ := b.notifyState(t); return stored == 0 }, 60*time.Second, 20*time.Millisecond,
		"copied to the DLQ, then terminated")
	require.Equal(t, int32(3), b.faulty.calls.Load())
}
