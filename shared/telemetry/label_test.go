package telemetry_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/telemetry"
)

func TestTenantLabelsKeepTheFirstTenantsAndCountTheRestAsOther(t *testing.T) {
	t.Parallel()
	const max = 100
	labels := telemetry.NewTenantLabels(max)
	first := labels.Value("acme")

	values := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				v := labels.Value(fmt.Sprintf("tenant-%x", rand.Uint64()))
				mu.Lock()
				values[v] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	require.Equal(t, "acme", first)
	require.Len(t, values, max, "99 random tenants after acme, then other")
	require.True(t, values[telemetry.Other])
	require.Equal(t, "acme", labels.Value("acme"), "a tenant seen early keeps its own series")
	require.Equal(t, telemetry.Other, labels.Value("tenant-late"))
	require.Equal(t, telemetry.Invalid, labels.Value("not a tenant"), "no raw input: the shape is checked first")
	require.Equal(t, telemetry.Invalid, labels.Value(string(make([]byte, 70))))
	require.Empty(t, labels.Value(""))
}
