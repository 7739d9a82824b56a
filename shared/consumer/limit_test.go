package consumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// drive runs rounds of work on l: in each, as many start as l allows,
// up to demand, and all end, each having taken rtt of how many ran.
func drive(l *limiter, demand, rounds int, rtt func(inflight int) time.Duration) {
	for range rounds {
		started := 0
		for started < demand && l.tryAcquire() {
			started++
		}
		took := rtt(started)
		for range started {
			l.release(took)
		}
	}
}

// slowProvider answers in 200 ms however many wait on it.
func slowProvider(int) time.Duration { return 200 * time.Millisecond }

// cores take 100 µs per send in flight, at least 1 ms (the round trips):
// beyond 10 in flight, sends wait on each other.
func cores(inflight int) time.Duration {
	return max(time.Millisecond, time.Duration(inflight)*100*time.Microsecond)
}

// A provider that takes 200 ms whatever the sends in flight has the limit
// grow to the most; once it answers at once and the sends queue on the
// cores instead, the limit falls back near the 10 they sustain.
func TestTheLimitGrowsUnderASlowProviderAndShrinksWhenSendsQueue(t *testing.T) {
	t.Parallel()
	l := newLimiter(4, 192)
	drive(l, 1000, 400, slowProvider)
	require.Equal(t, 192, l.Limit(), "a slow provider's latency covered")
	drive(l, 1000, 2000, cores)
	require.LessOrEqual(t, l.Limit(), 30, "sends queueing on the cores")
	require.GreaterOrEqual(t, l.Limit(), 4)
}

// Work that never fills half the limit — two at a time — does not grow
// it: it says nothing of what more in flight would take.
func TestTheLimitDoesNotGrowOnWorkThatLeavesItIdle(t *testing.T) {
	t.Parallel()
	l := newLimiter(8, 192)
	drive(l, 2, 2000, slowProvider)
	require.Equal(t, 8, l.Limit())
}

// No more than the limit start at once; a release lets one more start.
func TestNoMoreThanTheLimitStartAtOnce(t *testing.T) {
	t.Parallel()
	l := newLimiter(4, 192)
	for range 4 {
		require.True(t, l.tryAcquire())
	}
	require.False(t, l.tryAcquire(), "a fifth beyond a limit of 4")
	l.release(0)
	require.True(t, l.tryAcquire(), "one ended: one more may start")
}
