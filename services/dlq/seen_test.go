package dlq

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/quota"
)

// The thresholds remembered are this month's and last month's: a
// long-running replica does not remember every month it has seen.
func TestSeenThresholdsForgetOldMonths(t *testing.T) {
	t.Parallel()
	var seen seenThresholds
	for _, month := range []string{"2026-10", "2026-11", "2026-12"} {
		for _, tenant := range []string{"acme", "globex"} {
			require.True(t, seen.first(quota.Event{Tenant: tenant, Channel: event.ChannelEmail, Month: month, Quota: 100, Threshold: 80}))
		}
	}
	require.False(t, seen.first(quota.Event{Tenant: "acme", Channel: event.ChannelEmail, Month: "2026-12", Quota: 100, Threshold: 80}))
	require.False(t, seen.first(quota.Event{Tenant: "acme", Channel: event.ChannelEmail, Month: "2026-11", Quota: 100, Threshold: 80}),
		"last month's events may still be arriving")
	require.Len(t, seen.months, keptMonths)
	require.NotContains(t, seen.months, "2026-10")
}
