package router

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// While other events flow, a fan-out rests 1.5× as long as it worked
// (a share of 0.4); alone, or after the events stop, it never rests.
func TestAFanoutRestsWhileOtherEventsFlow(t *testing.T) {
	t.Parallel()
	now := time.Now()
	g := newGate(time.Hour)
	g.resumed = now.Add(-4 * time.Millisecond)
	require.Zero(t, g.rest(now), "alone, the fan-out works without rest")

	g.routed = now.Add(-500 * time.Millisecond)
	g.resumed = now.Add(-4 * time.Millisecond)
	require.Equal(t, 6*time.Millisecond, g.rest(now), "another event half a second ago")
	require.Zero(t, g.worked, "a rest pays for the work before it")

	g.resumed = now.Add(-500 * time.Microsecond)
	require.Zero(t, g.rest(now), "a rest shorter than a timer's is carried over")
	g.resumed = now.Add(-500 * time.Microsecond)
	require.Equal(t, 1500*time.Microsecond, g.rest(now), "and taken with the next")

	g.resumed = now.Add(-2 * time.Second)
	require.Zero(t, g.rest(now), "a pause longer than fanoutRecent was idleness, not work")

	g.enter()
	g.routed, g.resumed = time.Time{}, now.Add(-2*time.Millisecond)
	require.Equal(t, 3*time.Millisecond, g.rest(now), "an event being routed now")
	g.leave(true)
	g.resumed = now.Add(-2 * time.Millisecond)
	require.Zero(t, g.rest(now), "the event that started the fan-out is not another")

	g.routed = now.Add(-fanoutRecent)
	g.resumed = now.Add(-2 * time.Millisecond)
	require.Zero(t, g.rest(now), "a second after the last event, the fan-out has the router again")
}

// yield takes the rest: resting is sleeping, not only counting.
func TestAFanoutYieldRests(t *testing.T) {
	t.Parallel()
	g := newGate(time.Hour)
	g.enter()
	g.leave(false)
	g.resumed = time.Now().Add(-4 * time.Millisecond)
	began := time.Now()
	g.yield(context.Background())
	require.GreaterOrEqual(t, time.Since(began), 6*time.Millisecond)
}
