package lock_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/lock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, heraldtest.LeakOptions...)
}

// backends are the Redis servers the suite runs against: always the
// embedded one `herald dev` uses, and the real redis-server REDIS_URL names.
func backends(t *testing.T) map[string]func(t *testing.T) *lock.Redis {
	t.Helper()
	out := map[string]func(t *testing.T) *lock.Redis{
		"embedded": func(t *testing.T) *lock.Redis {
			r, err := embedded.StartRedis("127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(r.Close)
			return connect(t, r.URL())
		},
	}
	if url := os.Getenv("REDIS_URL"); url != "" {
		out["redis-server"] = func(t *testing.T) *lock.Redis { return connect(t, url) }
	}
	return out
}

func connect(t *testing.T, url string) *lock.Redis {
	t.Helper()
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	// A random prefix per test keeps parallel tests apart on a shared server.
	return lock.NewRedis(client, heraldtest.Prefix())
}

func TestConformance(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("OneOwnerAtATime", func(t *testing.T) {
				t.Parallel()
				l := open(t)
				ctx := context.Background()
				lease, err := l.Acquire(ctx, "acme:PO-1:1:purchase_order:email:olga@zarya.example", time.Minute)
				require.NoError(t, err)
				_, err = l.Acquire(ctx, "acme:PO-1:1:purchase_order:email:olga@zarya.example", time.Minute)
				require.ErrorIs(t, err, lock.ErrHeld)
				require.NoError(t, lease.Release(ctx))
				again, err := l.Acquire(ctx, "acme:PO-1:1:purchase_order:email:olga@zarya.example", time.Minute)
				require.NoError(t, err, "released leases can be taken again")
				require.NoError(t, again.Release(ctx))
			})
			t.Run("ExpiresByItself", func(t *testing.T) {
				t.Parallel()
				l := open(t)
				ctx := context.Background()
				_, err := l.Acquire(ctx, "k", 200*time.Millisecond)
				require.NoError(t, err)
				require.Eventually(t, func() bool {
					lease, err := l.Acquire(ctx, "k", time.Minute)
					return err == nil && lease != nil
				}, 3*time.Second, 20*time.Millisecond, "a crashed holder's lease frees itself")
			})
			t.Run("OnlyTheOwnerReleases", func(t *testing.T) {
				t.Parallel()
				l := open(t)
				ctx := context.Background()
				stale, err := l.Acquire(ctx, "k", 200*time.Millisecond)
				require.NoError(t, err)
				var current *lock.Lease
				require.Eventually(t, func() bool {
					current, err = l.Acquire(ctx, "k", time.Minute)
					return err == nil
				}, 3*time.Second, 20*time.Millisecond)
				require.ErrorIs(t, stale.Release(ctx), lock.ErrNotHeld)
				require.ErrorIs(t, stale.Extend(ctx, time.Minute), lock.ErrNotHeld)
				_, err = l.Acquire(ctx, "k", time.Minute)
				require.ErrorIs(t, err, lock.ErrHeld, "the stale owner did not free the current owner's lease")
				require.NoError(t, current.Release(ctx))
			})
			t.Run("ExtendKeepsItHeld", func(t *testing.T) {
				t.Parallel()
				l := open(t)
				ctx := context.Background()
				lease, err := l.Acquire(ctx, "k", 300*time.Millisecond)
				require.NoError(t, err)
				// Taken after k and never extended, "control" frees itself
				// no earlier than k's first TTL would have ended.
				_, err = l.Acquire(ctx, "control", 300*time.Millisecond)
				require.NoError(t, err)
				require.NoError(t, lease.Extend(ctx, time.Minute))
				require.Eventually(t, func() bool {
					_, err := l.Acquire(ctx, "control", time.Minute)
					return err == nil
				}, 10*time.Second, 20*time.Millisecond)
				_, err = l.Acquire(ctx, "k", time.Minute)
				require.ErrorIs(t, err, lock.ErrHeld)
			})
			t.Run("RacersGetOneLease", func(t *testing.T) {
				t.Parallel()
				l := open(t)
				var won atomic.Int32
				var wg sync.WaitGroup
				for range 32 {
					wg.Go(func() {
						if _, err := l.Acquire(context.Background(), "race", time.Minute); err == nil {
							won.Add(1)
						} else {
							require.ErrorIs(t, err, lock.ErrHeld)
						}
					})
				}
				wg.Wait()
				require.Equal(t, int32(1), won.Load())
			})
			// Commands of concurrent callers share round trips: each must
			// still get its own answer.
			t.Run("ManyCallersEachGetTheirOwnAnswer", func(t *testing.T) {
				t.Parallel()
				l := open(t)
				ctx := context.Background()
				const keys, racers = 300, 3
				var won [keys]atomic.Int32
				leases := make(chan *lock.Lease, keys)
				var wg sync.WaitGroup
				for k := range keys {
					for range racers {
						wg.Go(func() {
							lease, err := l.Acquire(ctx, fmt.Sprintf("key-%d", k), time.Minute)
							if err == nil {
								won[k].Add(1)
								leases <- lease
								return
							}
							require.ErrorIs(t, err, lock.ErrHeld)
						})
					}
				}
				wg.Wait()
				close(leases)
				for k := range keys {
					require.Equal(t, int32(1), won[k].Load(), "key-%d", k)
				}
				for lease := range leases {
					wg.Go(func() { require.NoError(t, lease.Release(ctx)) })
				}
				wg.Wait()
				for k := range keys {
					lease, err := l.Acquire(ctx, fmt.Sprintf("key-%d", k), time.Minute)
					require.NoError(t, err, "key-%d was released", k)
					require.NoError(t, lease.Release(ctx))
				}
			})
		})
	}
}

// A Redis restarted since the release script was loaded answers NOSCRIPT;
// the release still happens.
func TestReleaseAfterTheScriptCacheIsFlushed(t *testing.T) {
	t.Parallel()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		r, err := embedded.StartRedis("127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(r.Close)
		url = r.URL()
	}
	l := connect(t, url)
	ctx := context.Background()
	first, err := l.Acquire(ctx, "k", time.Minute)
	require.NoError(t, err)
	require.NoError(t, first.Release(ctx), "loads the script")

	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	admin := redis.NewClient(opts)
	defer admin.Close()
	require.NoError(t, admin.ScriptFlush(ctx).Err())

	lease, err := l.Acquire(ctx, "k", time.Minute)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
	_, err = l.Acquire(ctx, "k", time.Minute)
	require.NoError(t, err, "released")
}

func TestRedisDownIsNotHeldNorFree(t *testing.T) {
	t.Parallel()
	port, err := heraldtest.RefusingPort(t, net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	l := connect(t, fmt.Sprintf("redis://127.0.0.1:%d", port))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = l.Acquire(ctx, "k", time.Minute)
	require.Error(t, err)
	require.NotErrorIs(t, err, lock.ErrHeld, "an unreachable Redis must not look like a held lease")
}
