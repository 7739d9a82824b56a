package delivery_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

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
	b.worker(t, b.nats.JS, func(c *config) {
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
	b.worker(t, b.nats.JS, func(c *config) { c.Concurrency, c.Ledger = 2, b.readLedger(t, time.Hour) })
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

// outageLedger cannot write a delivered outcome while down. With lost, the
// outage is one write that lands but whose answer is lost, as when a NATS
// leader steps down after storing it.
type outageLedger struct {
	delivery.Ledger
	lost  bool
	mu    sync.Mutex
	down  bool
	tries int
}

func (l *outageLedger) Put(ctx context.Context, e *ledger.Entry) error {
	l.mu.Lock()
	down := l.down && e.State == ledger.Delivered
	if e.State == ledger.Delivered {
		l.tries++
	}
	first := l.tries == 1
	l.mu.Unlock()
	if !down {
		return l.Ledger.Put(ctx, e)
	}
	if first && l.lost {
		landed := *e // written from a copy: e keeps the revision it had
		if err := l.Ledger.Put(ctx, &landed); err != nil {
			return err
		}
		l.heal()
	}
	return fmt.Errorf("ledger: %w", context.DeadlineExceeded)
}

func (l *outageLedger) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}

// writes counts the writes of a delivered outcome.
func (l *outageLedger) writes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tries
}

// The ledger cannot record a send for several lease TTLs. The worker that
// sent holds its lease meanwhile, so a copy republished during the outage
// waits — the claim it would find looks stale — and finds the outcome
// once it is written. One send.
func TestLedgerOutageAfterASendHoldsCopiesOff(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	l, err := ledger.Open(heraldtest.Context(t), b.nats.JS)
	require.NoError(t, err)
	outage := &outageLedger{Ledger: l, down: true}
	reader := sdkmetric.NewManualReader()
	b.worker(t, b.nats.JS, func(c *config) {
		c.Concurrency, c.Ledger, c.LockTTL = 2, outage, time.Second
		c.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	})
	t.Cleanup(outage.heal) // before the worker stops: it waits for the ledger

	b.publishAs(t, 1, "first")
	require.Eventually(t, func() bool { return outage.writes() >= 1 }, 30*time.Second, 10*time.Millisecond, "sent, and recording")
	b.publishAs(t, 1, "republished")
	// Three lease TTLs: long enough for a lease not extended to expire,
	// and the claim to look stale to the copy.
	time.Sleep(3 * time.Second)
	require.Equal(t, 1, b.calls(), "the copy waited while the outcome could not be recorded")

	outage.heal()
	b.waitSettled(t, "both copies are acknowledged")
	require.Equal(t, 1, b.sent())
	require.Equal(t, ledger.Delivered, b.ledgerEntry(t, 1).State)
	require.Zero(t, heraldtest.Counts(t, reader, "herald.deliveries", "outcome")["duplicate_sent"])
}

// The ledger stores the delivered outcome but its answer is lost: the
// worker's next write conflicts with its own. That is the outcome
// recorded, not another worker's send.
func TestALostLedgerAnswerIsNotASecondSend(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
	l, err := ledger.Open(heraldtest.Context(t), b.nats.JS)
	require.NoError(t, err)
	outage := &outageLedger{Ledger: l, down: true, lost: true}
	reader := sdkmetric.NewManualReader()
	b.worker(t, b.nats.JS, func(c *config) {
		c.Ledger = outage
		c.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	})

	b.publishAs(t, 1, "first")
	b.waitSettled(t, "acknowledged")
	require.Equal(t, 1, b.sent())
	require.Equal(t, ledger.Delivered, b.ledgerEntry(t, 1).State)
	require.Greater(t, outage.writes(), 1, "written again after the lost answer")
	counts := heraldtest.Counts(t, reader, "herald.deliveries", "outcome")
	require.Equal(t, int64(1), counts["delivered"])
	require.Zero(t, counts["duplicate_sent"])
}
