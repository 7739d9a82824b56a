package bench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/bench"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// A small run through the real pipeline, with republished events and
// provider faults: every notification counted once, latencies measured.
func TestRunCountsEveryDeliveryOnce(t *testing.T) {
	t.Parallel()
	var seen []bench.Progress
	r, err := bench.Run(context.Background(), bench.Config{
		Orders: 60, Recipients: 3, DuplicateRatio: 0.2, FaultRate: 0.1, Concurrency: 8,
	}, func(p bench.Progress) { seen = append(seen, p) })
	require.NoError(t, err)
	require.Equal(t, 180, r.Expected)
	require.Equal(t, 180, r.Delivered)
	require.Zero(t, r.Duplicates)
	require.Zero(t, r.Lost)
	require.Positive(t, r.Retries, "10% of calls failed and were retried")
	require.Positive(t, r.Latency.P50)
	require.LessOrEqual(t, r.Latency.P50, r.Latency.P99)
	require.LessOrEqual(t, r.Latency.P99, r.Latency.Max)
	require.EqualValues(t, 180, r.Histogram.TotalCount())
	require.True(t, r.EmbeddedNATS)
	require.NotEmpty(t, seen)
	require.Equal(t, 180, seen[len(seen)-1].Delivered)
}
