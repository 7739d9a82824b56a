package ratelimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ratelimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

func limiter(t *testing.T, url string) *ratelimit.Limiter {
	t.Helper()
	return ratelimit.New(heraldtest.RedisClient(t, url), heraldtest.Prefix())
}

// Five a minute: five at once, then the sixth waits about twelve seconds,
// told in Retry-After and the RateLimit headers; another key is its own.
// The embedded Redis-protocol server (herald dev without REDIS_URL) runs
// the same script.
func TestAPlanOfFiveAMinute(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]string{"redis": heraldtest.RedisURL(t), "embedded": embeddedURL(t)} {
		t.Run(name, func(t *testing.T) {
			l := limiter(t, url)
			ctx := heraldtest.Context(t)
			five := ratelimit.Limit{PerMinute: 5, Burst: 5}
			for i := range 5 {
				d, err := l.Allow(ctx, "intake:free-co", five)
				require.NoError(t, err)
				require.True(t, d.Allowed, "request %d", i+1)
				require.Equal(t, 1, d.Granted)
				require.Equal(t, 4-i, d.Remaining)
			}
			d, err := l.Allow(ctx, "intake:free-co", five)
			require.NoError(t, err)
			require.False(t, d.Allowed)
			require.InDelta(t, 12*time.Second, d.RetryAfter, float64(2*time.Second))
			h := d.Headers("free")
			require.Equal(t, `"free";q=5;w=60`, h["RateLimit-Policy"])
			require.Regexp(t, `^"free";r=0;t=(59|60)$`, h["RateLimit"])
			require.Contains(t, []string{"11", "12"}, h["Retry-After"])

			d, err = l.Allow(ctx, "intake:other-co", five)
			require.NoError(t, err)
			require.True(t, d.Allowed, "each tenant has its own allowance")
			require.NotContains(t, d.Headers("free"), "Retry-After")
		})
	}
}

// A worker taking a batch asks once for up to what it wants: of five a
// minute, three, then the two left of five asked, then none, with when
// the next one is — the same GCRA the single requests draw on.
func TestAllowUpToTakesWhatThereIs(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]string{"redis": heraldtest.RedisURL(t), "embedded": embeddedURL(t)} {
		t.Run(name, func(t *testing.T) {
			l := limiter(t, url)
			ctx := heraldtest.Context(t)
			five := ratelimit.Limit{PerMinute: 5, Burst: 5}
			d, err := l.AllowUpTo(ctx, "send:free-co", five, 3)
			require.NoError(t, err)
			require.Equal(t, ratelimit.Decision{Allowed: true, Granted: 3, Limit: five, Remaining: 2, ResetAfter: d.ResetAfter}, d)
			d, err = l.AllowUpTo(ctx, "send:free-co", five, 5)
			require.NoError(t, err)
			require.True(t, d.Allowed)
			require.Equal(t, 2, d.Granted, "what was left, not what was asked")
			d, err = l.AllowUpTo(ctx, "send:free-co", five, 5)
			require.NoError(t, err)
			require.False(t, d.Allowed)
			require.Zero(t, d.Granted)
			require.InDelta(t, 12*time.Second, d.RetryAfter, float64(2*time.Second))
			d, err = l.Allow(ctx, "send:free-co", five)
			require.NoError(t, err)
			require.False(t, d.Allowed, "one allowance, however it is asked for")

			d, err = l.AllowUpTo(ctx, "send:other-co", five, 0)
			require.NoError(t, err)
			require.Equal(t, 1, d.Granted, "asking for none asks for one")
		})
	}
}

// A request that costs three takes three or none: of five a minute,
// three, then none of three more (two are left, and taken by single
// requests after), and never more than the burst at once.
func TestAllowNTakesAllOrNone(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]string{"redis": heraldtest.RedisURL(t), "embedded": embeddedURL(t)} {
		t.Run(name, func(t *testing.T) {
			l := limiter(t, url)
			ctx := heraldtest.Context(t)
			five := ratelimit.Limit{PerMinute: 5, Burst: 5}
			d, err := l.AllowN(ctx, "intake:free-co", five, 3)
			require.NoError(t, err)
			require.Equal(t, ratelimit.Decision{Allowed: true, Granted: 3, Limit: five, Remaining: 2, ResetAfter: d.ResetAfter}, d)
			d, err = l.AllowN(ctx, "intake:free-co", five, 3)
			require.NoError(t, err)
			require.False(t, d.Allowed, "two are left, not three")
			require.Zero(t, d.Granted)
			require.InDelta(t, 12*time.Second, d.RetryAfter, float64(2*time.Second), "when the third is back")
			for range 2 {
				d, err = l.Allow(ctx, "intake:free-co", five)
				require.NoError(t, err)
				require.True(t, d.Allowed, "the refusal took nothing")
			}
			d, err = l.AllowN(ctx, "intake:other-co", five, 6)
			require.NoError(t, err)
			require.False(t, d.Allowed, "more than the burst, even untouched")
		})
	}
}

// Redis down is an error, for the caller to fail open or closed.
func TestRedisDownIsAnError(t *testing.T) {
	t.Parallel()
	srv := heraldtest.StartRedisServer(t)
	l := limiter(t, srv.URL())
	srv.Stop()
	_, err := l.Allow(heraldtest.Context(t), "intake:acme", ratelimit.Limit{PerMinute: 5, Burst: 5})
	require.ErrorContains(t, err, "rate limit: ")
}

func embeddedURL(t *testing.T) string {
	t.Helper()
	r, err := embedded.StartRedis("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r.URL()
}
