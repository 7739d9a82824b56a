package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// send is one handling's time and the part of it spent waiting outside.
type send func(inflight int) (took, waited time.Duration)

// drive runs rounds of work on l: in each, as many start as l allows,
// up to demand, and all end, each having taken what s says of how many
// ran.
func drive(l *limiter, demand, rounds int, s send) {
	for range rounds {
		started := 0
		for started < demand && l.tryAcquire() {
			started++
		}
		took, waited := s(started)
		for range started {
			if l.keep(took, waited) {
				l.leave()
			}
		}
	}
}

// slowProvider answers in 200 ms however many wait on it; the send's own
// work is 1 ms.
func slowProvider(int) (time.Duration, time.Duration) {
	return 201 * time.Millisecond, 200 * time.Millisecond
}

// cores take 100 µs per send in flight, at least 1 ms, and the provider
// answers at once: beyond 10 in flight, sends wait on each other.
func cores(inflight int) (time.Duration, time.Duration) {
	return max(time.Millisecond, time.Duration(inflight)*100*time.Microsecond), 0
}

// tenTimes is a provider that takes ten times a send's own work.
func tenTimes(int) (time.Duration, time.Duration) {
	return 11 * time.Millisecond, 10 * time.Millisecond
}

// A provider that takes 200 ms has the limit at the most; once it answers
// at once, the sends only queue on the cores and the limit is the least —
// however long they take queueing, which more in flight would lengthen.
func TestTheLimitCoversAProvidersWaitAndNotTheCoresQueue(t *testing.T) {
	t.Parallel()
	l := newLimiter(12, 192)
	drive(l, 1000, 50, slowProvider)
	require.Equal(t, 192, l.Limit(), "a slow provider's latency covered")
	drive(l, 1000, 50, cores)
	require.Equal(t, 12, l.Limit(), "sends queueing on the cores")
}

// Between the two: a provider taking ten times a send's own work has 21
// times the least in flight (1 + 2 × 10), twice what keeps the cores
// busy meanwhile.
func TestTheLimitGrowsWithTheShareOfTimeSpentWaiting(t *testing.T) {
	t.Parallel()
	l := newLimiter(4, 192)
	drive(l, 1000, 50, tenTimes)
	require.Equal(t, 84, l.Limit())
}

// No more than the limit start at once; a release lets one more start.
func TestNoMoreThanTheLimitStartAtOnce(t *testing.T) {
	t.Parallel()
	l := newLimiter(4, 192)
	for range 4 {
		require.True(t, l.tryAcquire())
	}
	require.False(t, l.tryAcquire(), "a fifth beyond a limit of 4")
	l.leave()
	require.True(t, l.tryAcquire(), "one left: one more may start")
}

// A handler's waits reach the loop through its context; outside a loop
// with a limit, telling them does nothing.
func TestWaitedAddsToTheHandlingsWaits(t *testing.T) {
	t.Parallel()
	ctx, waits := withWaits(context.Background())
	Waited(ctx, 3*time.Millisecond)
	Waited(ctx, 2*time.Millisecond)
	require.Equal(t, 5*time.Millisecond, time.Duration(waits.Load()))
	Waited(context.Background(), time.Second) // no loop: nothing to tell
}

// When the limit comes down, workers over it give their slots up at their
// next handling, until as many hold one as the limit allows; the rest keep
// theirs.
func TestWorkersOverALowerLimitGiveTheirSlotsUp(t *testing.T) {
	t.Parallel()
	l := newLimiter(4, 192)
	drive(l, 1000, 50, slowProvider)
	require.Equal(t, 192, l.Limit())
	for range 20 {
		require.True(t, l.tryAcquire())
	}
	gaveUp := 0
	for range 192 + 20 { // a window of handlings at once, then one more each
		if !l.keep(time.Millisecond, 0) {
			gaveUp++
		}
	}
	require.Equal(t, 4, l.Limit())
	require.Equal(t, 16, gaveUp, "20 held slots, 4 allowed")
	require.Equal(t, 4, l.inflight)
}
