package heraldtest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// A restart loses every key, on the same address, and a client that was
// connected before carries on once the server is back.
func TestRedisServerRestartsEmpty(t *testing.T) {
	t.Parallel()
	srv := heraldtest.StartRedisServer(t)
	opts, err := redis.ParseURL(srv.URL())
	require.NoError(t, err)
	require.Equal(t, "unix", opts.Network)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	require.NoError(t, rdb.Set(ctx, "lease", "mine", 0).Err())

	srv.Stop()
	require.Error(t, rdb.Get(ctx, "lease").Err(), "down means down")
	srv.Start()
	require.ErrorIs(t, rdb.Get(ctx, "lease").Err(), redis.Nil, "back, and empty")

	require.NoError(t, rdb.Set(ctx, "lease", "again", 0).Err())
	srv.Restart()
	require.ErrorIs(t, rdb.Get(ctx, "lease").Err(), redis.Nil)
}
