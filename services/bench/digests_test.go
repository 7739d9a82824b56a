package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/bench"
)

// A tiny digests run: 140 low-stock alerts of 7 warehouses, a window of
// 15 s (the alerts reach their digests one after another, a few ms each:
// every one must within the window, on a loaded machine and under -race). Each warehouse's alerts go out as exactly one digest listing every
// one of them — no digest lost, split over two, or sent twice, no alert
// left out or listed twice — and each digest's lateness is measured from
// its window's end.
func TestRunDigestsSendsOneDigestPerWarehouseWithEveryAlert(t *testing.T) {
	t.Parallel()
	var last bench.DigestsProgress
	r, err := bench.RunDigests(context.Background(), bench.DigestsConfig{
		Digests: 140, Keys: 7, Window: 15 * time.Second, Timeout: 15 * time.Second,
	}, func(p bench.DigestsProgress) { last = p })
	require.NoError(t, err)
	require.NoError(t, r.Check())
	require.Equal(t, 7, r.Digests, "one digest per warehouse")
	require.Equal(t, 140, r.Sent, "every alert listed")
	require.Zero(t, r.SentTwice)
	require.Zero(t, r.Lost)
	require.Zero(t, r.Split)
	require.Zero(t, r.Mixed)
	require.Zero(t, r.Empty)
	require.Zero(t, r.Left, "no item or flush left for a digest to come")
	require.Zero(t, r.Unmatched, "every digest's window end was seen")
	require.EqualValues(t, 7, r.Histogram.TotalCount(), "a lateness for each digest")
	require.LessOrEqual(t, r.Lateness.P50, r.Lateness.P99)
	require.Equal(t, bench.DigestsProgress{Phase: bench.DigestsFlushing, Gathered: 140, Sent: 140, Expected: 140,
		DigestsSent: 7, DigestsWanted: 7}, last)
	require.Positive(t, r.StartedPerSecond)
	require.Positive(t, r.CPUPerAlertMS)
	require.Positive(t, r.PeakPending)
	require.Positive(t, r.RunsBytes, "the items wait in RUNS")
	require.Positive(t, r.KVBytes, "and their runs in KV_runs")
}

func TestRunDigestsRefusesWhatCannotBeMeasured(t *testing.T) {
	t.Parallel()
	for flag, cfg := range map[string]bench.DigestsConfig{
		"--keys":        {Digests: 10, Keys: 11},
		"--window":      {Digests: 10, Keys: 1, Window: time.Millisecond},
		"fill a digest": {Digests: 5000, Keys: 1},
	} {
		_, err := bench.RunDigests(context.Background(), cfg, nil)
		require.ErrorContains(t, err, flag)
	}
}

// Check fails a run whose digests were not one per warehouse with every
// alert once, and names the window when the alerts outlasted it.
func TestDigestsReportCheckNamesWhatWentWrong(t *testing.T) {
	t.Parallel()
	ok := bench.DigestsReport{Alerts: 300, Keys: 7, Digests: 7, Sent: 300, WindowSeconds: 1}
	require.NoError(t, ok.Check())
	for what, edit := range map[string]func(*bench.DigestsReport){
		"8 digests sent for 7":   func(r *bench.DigestsReport) { r.Digests = 8 },
		"299 of 300 alerts":      func(r *bench.DigestsReport) { r.Sent, r.Lost = 299, 1 },
		"1 twice":                func(r *bench.DigestsReport) { r.SentTwice = 1 },
		"1 warehouses split":     func(r *bench.DigestsReport) { r.Split = 1 },
		"1 digests mixing":       func(r *bench.DigestsReport) { r.Mixed = 1 },
		"1 digest messages left": func(r *bench.DigestsReport) { r.Left = 1 },
		"raise --window":         func(r *bench.DigestsReport) { r.Digests, r.GatherSeconds = 14, 2 },
	} {
		r := ok
		edit(&r)
		require.ErrorContains(t, r.Check(), what)
	}
}
