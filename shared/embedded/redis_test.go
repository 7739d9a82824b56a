package embedded_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/embedded"
)

// Keys expire on the wall clock — a lease of a crashed worker must end —
// moved on by the server's tick rather than at every command.
func TestEmbeddedRedisKeysExpireOnTheWallClock(t *testing.T) {
	t.Parallel()
	r, err := embedded.StartRedis("")
	require.NoError(t, err)
	t.Cleanup(r.Close)
	opts, err := redis.ParseURL(r.URL())
	require.NoError(t, err)
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	ctx := t.Context()
	require.NoError(t, c.Set(ctx, "lease", "w1", 200*time.Millisecond).Err())
	require.NoError(t, c.Set(ctx, "kept", "v", time.Hour).Err())
	require.Eventually(t, func() bool { return c.Exists(ctx, "lease").Val() == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "v", c.Get(ctx, "kept").Val(), "a key with an hour to live is still there")
	ttl := c.PTTL(ctx, "kept").Val()
	require.Greater(t, ttl, 59*time.Minute)
	require.Less(t, ttl, time.Hour, "its TTL moved on with the clock")
}
