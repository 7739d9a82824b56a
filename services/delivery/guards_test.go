package delivery_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
)

// Two guards keep a second copy of a notification from being sent while the
// first is under way: the lease in Redis, and the claim in the ledger (a
// recent "sending" entry means: wait). Each test here takes one guard away
// by circumstance, so that the other alone must hold.

// readLedger is the ledger as one worker reads it: it counts the reads that
// found a claim ("sending"), and sees every entry's time skew earlier — as a
// worker whose clock runs ahead of the one that wrote it would.
type readLedger struct {
	delivery.Ledger
	skew   time.Duration
	claims atomic.Int32
}

func (l *readLedger) Get(ctx context.Context, tenant, dedupeKey string) (ledger.Entry, error) {
	e, err := l.Ledger.Get(ctx, tenant, dedupeKey)
	if err == nil && e.State == ledger.Sending {
		l.claims.Add(1)
		e.UpdatedAt = e.UpdatedAt.Add(-l.skew)
	}
	return e, err
}

func (b *bundle) readLedger(t *testing.T, skew time.Duration) *readLedger {
	t.Helper()
	l, err := ledger.Open(heraldtest.Context(t), b.nats.JS)
	require.NoError(t, err)
	return &readLedger{Ledger: l, skew: skew}
}

// holdFirstSend holds SES's answer to the first send until release is
// called, or the test ends — before its workers stop, which wait for it.
func (b *bundle) holdFirstSend(t *testing.T) (release func()) {
	t.Helper()
	held := make(chan struct{})
	release = sync.OnceFunc(func() { close(held) })
	t.Cleanup(release)
	b.ses.Faults(emailtest.FailFirst(1, sestest.Hold(held)))
	return release
}

// delivered is how many deliveries of NOTIFY's messages the email-normal
// consumer made, redeliveries included.
func (b *bundle) delivered(t *testing.T) uint64 {
	t.Helper()
	c, err := b.nats.JS.Consumer(heraldtest.Context(t), "NOTIFY", "email-normal")
	require.NoError(t, err)
	return c.CachedInfo().Delivered.Consumer
}

// Redis restarts, empty, while a send is held at the provider: its lease is
// gone. A second copy of the notification (republished under another
// Nats-Msg-Id) takes a fresh lease; only the first send's claim in the
// ledger tells it to wait. Exactly one send.
func TestRedisRestartDuringASlowSendSendsOnce(t *testing.T) {
	t.Parallel()
	redisServer := heraldtest.StartRedisServer(t)
	opts, err := redis.ParseURL(redisServer.URL())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })

	b := setup(t, 1)
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	reads := b.readLedger(t, 0)
	// Two handlers, so the second copy is taken up while the first is
	// still sending, as by another worker.
	b.worker(t, b.nats.JS, func(c *delivery.Config) {
		c.Concurrency, c.Locker, c.Ledger = 2, lock.NewRedis(rdb, heraldtest.Prefix()), reads
	})
	release := b.holdFirstSend(t)

	b.publishAs(t, 1, "first")
	require.Eventually(t, func() bool { return b.calls() == 1 }, 30*time.Second, 10*time.Millisecond, "the first copy is sending")
	redisServer.Restart()
	require.Eventually(t, func() bool { return rdb.Ping(context.Background()).Err() == nil }, 30*time.Second, 10*time.Millisecond)

	b.publishAs(t, 1, "republished")
	// Before it sends, a copy reads the claim at most twice (on
	// redelivery, once to see whether it was delivered): a third read means
	// it found the claim, waited, and came back.
	require.Eventually(t, func() bool { return reads.claims.Load() >= 3 || b.calls() > 1 }, 30*time.Second, 10*time.Millisecond,
		"the second copy finds the claim and waits")
	require.Equal(t, 1, b.calls(), "the second copy waited for the first send")

	release()
	b.waitSettled(t, "both copies are acknowledged")
	require.Equal(t, 1, b.calls())
	require.Equal(t, 1, b.sent())
	e := b.ledgerEntry(t, 1)
	require.Equal(t, ledger.Delivered, e.State)
	require.Equal(t, 1, e.Tries)
}

// A second copy arrives while the first is sending, and the first's claim
// looks old to it (its clock runs an hour ahead: a claim's age is judged on
// the reader's clock, a lease's TTL on Redis's). The ledger would let it
// claim and send; the lease, held by the first, must hold it off.
func TestLeaseHoldsOffACopyWhoseClaimLooksStale(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	b.worker(t, b.nats.JS, func(c *delivery.Config) { c.Concurrency, c.Ledger = 2, b.readLedger(t, time.Hour) })
	release := b.holdFirstSend(t)

	b.publishAs(t, 1, "first")
	require.Eventually(t, func() bool { return b.calls() == 1 }, 30*time.Second, 10*time.Millisecond, "the first copy is sending")
	b.publishAs(t, 1, "republished")
	require.Eventually(t, func() bool { return b.delivered(t) >= 4 || b.calls() > 1 }, 30*time.Second, 10*time.Millisecond,
		"the second copy is put back, and again when it comes back")
	require.Equal(t, 1, b.calls(), "the second copy found the lease held")

	release()
	b.waitSettled(t, "both copies are acknowledged")
	require.Equal(t, 1, b.calls())
	require.Equal(t, 1, b.sent())
}
