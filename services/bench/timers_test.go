package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/bench"
)

// A tiny timers run: 200 runs each waiting 1 or 2 s on the workflow
// service, then 200 without a wait. Every run's timer is armed and every
// run sends exactly once — no timer lost, none fired twice — and each
// waiting run's lateness is measured from its timer's time, never before it.
func TestRunTimersFiresEveryTimerOnce(t *testing.T) {
	t.Parallel()
	phases := map[string]int{}
	r, err := bench.RunTimers(context.Background(), bench.TimersConfig{
		Timers: 200, MinWait: time.Second, MaxWait: 2 * time.Second,
	}, func(p bench.TimersProgress) {
		require.Equal(t, 200, p.Expected)
		phases[p.Phase] = max(phases[p.Phase], p.Started)
	})
	require.NoError(t, err)
	for name, p := range map[string]bench.TimersPhase{"waiting": r.Waiting, "no wait": r.NoWait} {
		require.Equal(t, 200, p.Runs, name)
		require.Equal(t, 200, p.Sent, "%s: every run sent", name)
		require.Zero(t, p.Duplicates, "%s: no run sent twice", name)
		require.Zero(t, p.Lost, name)
	}
	require.Zero(t, r.Short, "no run sent before its wait had passed")
	require.EqualValues(t, 200, r.Histogram.TotalCount(), "a lateness for each waiting run, from its armed timer")
	require.Zero(t, r.Early, "no timer fired before its time")
	require.EqualValues(t, r.AfterStart, r.AfterStartHistogram.TotalCount())
	require.LessOrEqual(t, r.AfterStart, 200)
	require.LessOrEqual(t, r.Lateness.P50, r.Lateness.P99)
	require.Equal(t, 200, phases[bench.TimersFiring], "every waiting run's timer was armed before the runs were watched firing")
	require.Equal(t, 200, phases[bench.TimersNoWait])
	for name, p := range map[string]bench.TimersPhase{"waiting": r.Waiting, "no wait": r.NoWait} {
		require.Positive(t, p.StartedPerSecond, name)
		require.Positive(t, p.CPUPerRunMS, name)
	}
	require.Positive(t, r.PeakPending)
	require.Positive(t, r.RunsBytes, "the pending timers take room in RUNS")
	require.Positive(t, r.KVBytes, "and their runs in KV_runs")
	require.Positive(t, r.CostRatio)
}

func TestRunTimersRefusesAWaitShorterThanASecond(t *testing.T) {
	t.Parallel()
	_, err := bench.RunTimers(context.Background(), bench.TimersConfig{Timers: 1, MinWait: time.Millisecond}, nil)
	require.ErrorContains(t, err, "--min-wait")
	_, err = bench.RunTimers(context.Background(), bench.TimersConfig{Timers: 1, MinWait: 3 * time.Second, MaxWait: 2 * time.Second}, nil)
	require.ErrorContains(t, err, "--max-wait")
}
