package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/bench"
	"github.com/heraldhq/herald/shared/event"
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

// The same on the sms channel (the real sms adapter and its templates, an
// in-process provider) and on the webhook channel (the real adapter,
// endpoint registry and guarded client, posting to loopback endpoints that
// verify each signature with the Standard Webhooks library): every
// notification reaches its recipient once, none lost, none refused.
func TestRunCountsEveryDeliveryOnceOnEachChannel(t *testing.T) {
	t.Parallel()
	for _, ch := range []event.Channel{event.ChannelSMS, event.ChannelWebhook} {
		t.Run(string(ch), func(t *testing.T) {
			t.Parallel()
			r, err := bench.Run(context.Background(), bench.Config{
				Channel: ch, Orders: 12, Recipients: 3, DuplicateRatio: 0.5, FaultRate: 0.15, Concurrency: 4,
			}, nil)
			require.NoError(t, err)
			require.Equal(t, string(ch), r.Channel)
			require.Equal(t, 36, r.Expected)
			require.Equal(t, 36, r.Delivered, "every notification accepted")
			require.Zero(t, r.Duplicates)
			require.Zero(t, r.Lost)
			require.Zero(t, r.BadSignatures, "every webhook verifies")
			// Faults are drawn at random, and 36 calls at 15 % all succeed
			// once in 350 runs: that faults are retried is the email run's
			// to show (180 calls). More calls here would trip the one
			// provider's circuit now and then, and wait out its cool-down.
			require.EqualValues(t, 36, r.Histogram.TotalCount(), "a latency for each, measured from its order's publish")
			require.Positive(t, r.Latency.P50)
		})
	}
}

func TestRunRefusesAChannelItCannotMeasure(t *testing.T) {
	t.Parallel()
	_, err := bench.Run(context.Background(), bench.Config{Channel: "pigeon", Orders: 1}, nil)
	require.ErrorContains(t, err, `channel "pigeon"`)
}

// A tiny fairness run: a bulk tenant's burst, then a small tenant's
// trickle, on both schedulings and alone. The far side takes 20 ms and
// each scheduling has few workers, so the bulk backlog takes far longer to
// drain than the small tenant takes to publish: served in turn, the small
// tenant is done while most of the burst still waits; first come, first
// served, it waits behind the burst (at most the sends under way finish
// after it). Every delivery is accepted exactly once in each run.
func TestRunTenantsServesTheSmallTenantDuringTheBurstOnlyWhenFair(t *testing.T) {
	t.Parallel()
	const concurrency = 4
	var runs []string
	r, err := bench.RunTenants(context.Background(), bench.TenantsConfig{
		Bulk: 300, Small: 10, SmallRate: 50, ProviderLatency: 20 * time.Millisecond, Concurrency: concurrency,
	}, func(p bench.TenantsProgress) {
		if len(runs) == 0 || runs[len(runs)-1] != p.Run {
			runs = append(runs, p.Run)
		}
	})
	require.NoError(t, err)
	require.Equal(t, []string{"fifo: small alone", "fifo: bulk alone", "fifo: together",
		"fair: small alone", "fair: bulk alone", "fair: together"}, runs)
	for name, m := range map[string]bench.Mode{"fifo": r.FIFO, "fair": r.Fair} {
		require.Nil(t, m.SmallAlone.Bulk, name)
		require.Nil(t, m.BulkAlone.Small, name)
		for _, p := range []bench.Phase{m.SmallAlone, m.BulkAlone, m.Together} {
			require.Zero(t, p.Duplicates(), name)
			require.Zero(t, p.Lost(), name)
		}
		for _, s := range []*bench.TenantResult{m.SmallAlone.Small, m.Together.Small} {
			require.Equal(t, 10, s.Delivered, name)
			require.EqualValues(t, 10, s.Histogram.TotalCount(), name)
		}
		for _, b := range []*bench.TenantResult{m.BulkAlone.Bulk, m.Together.Bulk} {
			require.Equal(t, 300, b.Delivered, name)
			require.Positive(t, b.PerSecond, name)
		}
		require.Positive(t, m.SmallP99Ratio, name)
		require.Positive(t, m.BulkThroughputRatio, name)
	}
	for _, ratio := range []float64{r.FairVsFIFO.SmallP99Ratio, r.FairVsFIFO.BulkThroughputRatio} {
		require.Positive(t, ratio)
	}
	require.Greater(t, r.Fair.Together.BulkLeft, 0, "fair: the small tenant's last delivery was accepted while the burst drained")
	require.LessOrEqual(t, r.FIFO.Together.BulkLeft, concurrency, "first come, first served: only sends already under way finished after it")
}

// A run counts JetStream's writes: without faults, duplicates or tenant
// checks, each order is its event, its mark in the router's events bucket
// (routed once per tenant and id) and its accepted record, and each
// delivery its message on NOTIFY, its ledger claim and its outcome — the
// outcome's write is the status event. With the checks, the quota's
// counter adds at most one write per delivery. Redis's round trips are
// counted too: without the checks, a delivery's lease taken and given
// back, two at the most (concurrent ones share a round trip); with them,
// at least each order's registration of its revisions.
func TestRunCountsTheWritesOfEachDelivery(t *testing.T) {
	t.Parallel()
	plain, err := bench.Run(context.Background(), bench.Config{Orders: 20, Recipients: 3, Concurrency: 8, Plain: true}, nil)
	require.NoError(t, err)
	require.Equal(t, 60, plain.Delivered)
	require.EqualValues(t, 3*20+3*60, plain.Writes)
	require.InDelta(t, float64(3*20+3*60)/60, plain.WritesPerDelivery, 1e-9)
	require.Positive(t, plain.RedisRoundTrips)
	require.LessOrEqual(t, plain.RedisRoundTrips, int64(2*60))
	require.InDelta(t, float64(plain.RedisRoundTrips)/60, plain.RedisRoundTripsPerDelivery, 1e-9)

	checked, err := bench.Run(context.Background(), bench.Config{Orders: 20, Recipients: 3, Concurrency: 8}, nil)
	require.NoError(t, err)
	require.Equal(t, 60, checked.Delivered)
	require.Greater(t, checked.Writes, plain.Writes, "the quota was counted")
	require.LessOrEqual(t, checked.Writes, plain.Writes+60, "at most a counter write a delivery")
	require.GreaterOrEqual(t, checked.RedisRoundTrips, int64(20), "each order registered its revisions")
}
