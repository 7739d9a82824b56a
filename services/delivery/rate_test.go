package delivery_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email/ses"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/ratelimit"
)

// counted is the real limiter, in Redis, counting the fair loop's asks
// and what they were granted.
type counted struct {
	*ratelimit.Limiter
	calls, granted atomic.Int64
}

func (c *counted) AllowUpTo(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Decision, error) {
	d, err := c.Limiter.AllowUpTo(ctx, key, limit, n)
	c.calls.Add(1)
	c.granted.Add(int64(d.Granted))
	return d, err
}

// rateLimited is a bundle whose tenant acme's plan has limit, with n of
// its deliveries waiting before the worker (fair, with Concurrency 4)
// starts.
func rateLimited(t *testing.T, limit ratelimit.Limit, n int) (*bundle, *counted) {
	t.Helper()
	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: heraldtest.Locker(t)}
	for i := range n {
		b.publish(t, i)
	}
	l := &counted{Limiter: ratelimit.New(heraldtest.RedisClient(t, heraldtest.RedisURL(t)), heraldtest.Prefix())}
	b.svc = b.worker(t, b.nats.JS, func(c *config) {
		c.Fair, c.Concurrency = true, 4
		c.Rates = &delivery.Rates{Limiter: l, Rate: func(string) (ratelimit.Limit, bool) { return limit, true }}
	})
	return b, l
}

// waitEmpty waits until NOTIFY holds no message: every delivery was
// acknowledged (the fair loop has no shared consumer to ask).
func (b *bundle) waitEmpty(t *testing.T) {
	t.Helper()
	ctx := heraldtest.Context(t)
	s, err := b.nats.JS.Stream(ctx, "NOTIFY")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := s.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs == 0
	}, 60*time.Second, 20*time.Millisecond)
}

// sentOnce asserts that SES accepted n messages, one per notification.
func (b *bundle) sentOnce(t *testing.T, n int) {
	t.Helper()
	ids := map[string]int{}
	for _, r := range b.ses.Received() {
		ids[r.Tags[ses.TagNotificationID]]++
	}
	require.Len(t, ids, n, "every notification sent")
	for id, sends := range ids {
		require.Equal(t, 1, sends, "%s sent once", id)
	}
	require.Equal(t, n, b.calls(), "no send tried twice")
}

// A tenant on a plan of 1,000,000 a minute with a burst of 500 waiting is
// served a pull's worth per Redis round trip, not one: the 500 cost a few
// dozen asks of the limiter, each granted what its pull then took, and
// every notification is sent once.
func TestARateLimitedBurstCostsARedisCallPerPull(t *testing.T) {
	t.Parallel()
	b, l := rateLimited(t, ratelimit.Limit{PerMinute: 1_000_000, Burst: 1_000_000}, 500)
	b.waitEmpty(t)
	b.sentOnce(t, 500)
	calls, granted := l.calls.Load(), l.granted.Load()
	t.Logf("500 deliveries: %d limiter calls, %d granted", calls, granted)
	require.Less(t, calls, int64(100), "a pull's worth a call, not one a delivery")
	require.Less(t, granted-500, int64(16), "what is granted is pulled, but for a pull's worth at most")
}

// A tenant on a plan of 600 a minute, burst 10, with 40 deliveries waiting
// gets its burst at once, then ten a second: never more than 10 + 10·t by
// t seconds after the worker started, yet all 40 within about the three
// seconds that allows; each sent once.
func TestATenantIsHeldToItsPlansRate(t *testing.T) {
	t.Parallel()
	start := time.Now()
	b, _ := rateLimited(t, ratelimit.Limit{PerMinute: 600, Burst: 10}, 40)
	for b.sent() < 40 {
		elapsed := time.Since(start)
		sent := b.sent()
		require.LessOrEqual(t, sent, 10+int(10*elapsed.Seconds()), "sent by %v", elapsed)
		// Four seconds at the rate; a minute is a loop holding the tenant
		// far below it, not a slow machine.
		require.Less(t, elapsed, time.Minute, "held far below the rate: %d sent", sent)
		time.Sleep(10 * time.Millisecond)
	}
	require.Greater(t, time.Since(start), 2800*time.Millisecond, "the 30 after the burst took at least three seconds, less a pull")
	b.waitEmpty(t)
	b.sentOnce(t, 40)
}

// Redis, which holds both the rate limiter's counts and the leases, is
// down. A rate-limited tenant's deliveries stay in NOTIFY unpulled while
// the limiter cannot answer — none handed to a worker that could only put
// it back, each such round trip a delivery counted toward MaxDeliver — and
// once Redis is back each is sent on its first delivery.
func TestRedisDownHoldsARateLimitedTenantWithoutUsingUpItsDeliveries(t *testing.T) {
	t.Parallel()
	srv := heraldtest.StartRedisServer(t)
	srv.Stop()
	opts, err := redis.ParseURL(srv.URL())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })

	b := &bundle{nats: heraldtest.StartNATSWithStreams(t), ses: sestest.New(t), locker: lock.NewRedis(rdb, heraldtest.Prefix())}
	const n = 3
	for i := range n {
		b.publish(t, i)
	}
	l := &counted{Limiter: ratelimit.New(rdb, heraldtest.Prefix())}
	limit := ratelimit.Limit{PerMinute: 600, Burst: 10}
	b.svc = b.worker(t, b.nats.JS, func(c *config) {
		c.Fair, c.Concurrency = true, 4
		c.Rates = &delivery.Rates{Limiter: l, Rate: func(string) (ratelimit.Limit, bool) { return limit, true }}
	})

	// A second ask comes only once the first answer was acted on: the
	// tenant held back, or — were it granted — its deliveries pulled.
	require.Eventually(t, func() bool { return l.calls.Load() >= 2 }, 30*time.Second, 10*time.Millisecond,
		"the fair loop asks the limiter again after a failed ask")
	require.Zero(t, b.deliveredByAnyConsumer(t), "nothing pulled while the rate cannot be checked")
	require.Zero(t, b.calls())

	srv.Start()
	b.waitEmpty(t)
	b.sentOnce(t, n)
	for i := range n {
		e := b.ledgerEntry(t, i)
		require.Equal(t, ledger.Delivered, e.State)
		require.Len(t, e.Attempts, 1)
		require.Equal(t, uint64(1), e.Attempts[0].Delivery, "notification %d sent on its first delivery", i)
	}
}

// deliveredByAnyConsumer adds up the deliveries every consumer of NOTIFY
// made, redeliveries included: the fair loop's consumers are its own, one
// per tenant and priority.
func (b *bundle) deliveredByAnyConsumer(t *testing.T) uint64 {
	t.Helper()
	ctx := heraldtest.Context(t)
	s, err := b.nats.JS.Stream(ctx, "NOTIFY")
	require.NoError(t, err)
	var total uint64
	list := s.ListConsumers(ctx)
	for info := range list.Info() {
		total += info.Delivered.Consumer
	}
	require.NoError(t, list.Err())
	return total
}
