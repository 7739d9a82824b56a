package inbox

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchFeed is a feed of 1,000 items, a third of them read.
func benchFeed(b *testing.B) testBundle {
	tb := setup(b)
	for i := range 1000 {
		it := item(i)
		it.Body = "Purchase order PO-2026-0042 shipped: 12 pallets, carrier DHL, tracking 00340434161234567890."
		_, _, err := tb.store.Add(tb.ctx, "acme", "ana", it, Limits{})
		require.NoError(b, err)
		if i%3 == 0 {
			_, err = tb.store.Mark(tb.ctx, "acme", "ana", it.ID, MarkRead)
			require.NoError(b, err)
		}
	}
	return tb
}

// p99 reports the 99th percentile of the per-call times as a metric.
func p99(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
}

// go test -bench . -run XXX ./shared/inbox/
func BenchmarkCounts(b *testing.B) {
	tb := benchFeed(b)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		c, err := tb.store.Counts(tb.ctx, "acme", "ana")
		times = append(times, time.Since(start))
		require.NoError(b, err)
		require.Equal(b, 1000, c.Total)
	}
	p99(b, times)
}

func BenchmarkFirstPage(b *testing.B) {
	tb := benchFeed(b)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		p, err := tb.store.List(tb.ctx, "acme", "ana", Query{})
		times = append(times, time.Since(start))
		require.NoError(b, err)
		require.Len(b, p.Items, DefaultLimit)
	}
	p99(b, times)
}
