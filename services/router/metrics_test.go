package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Publishers choose tenants freely: 2,000 events from 2,000 tenants make at
// most max_tenants tenant series per metric, plus "other".
func TestRandomTenantsMakeBoundedSeries(t *testing.T) {
	t.Parallel()
	const events, maxTenants = 2000, 10
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	reader := sdkmetric.NewManualReader()
	r, err := router.New(n.JS, router.Config{
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Tenants:       telemetry.NewTenantLabels(maxTenants),
	})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })

	b, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	var sample map[string]any
	require.NoError(t, json.Unmarshal(b, &sample))
	futures := make([]jetstream.PubAckFuture, 0, events)
	for i := range events {
		sample["id"], sample["tenant"] = fmt.Sprintf("evt-%d", i), fmt.Sprintf("t%x", rand.Uint64())
		msg := nats.NewMsg("orders.created")
		msg.Data, err = json.Marshal(sample)
		require.NoError(t, err)
		f, err := n.JS.PublishMsgAsync(msg)
		require.NoError(t, err)
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			require.NoError(t, err)
		case <-ctx.Done():
			require.NoError(t, ctx.Err())
		}
	}

	require.Eventually(t, func() bool {
		return sum(t, reader, "herald.router.events") == events
	}, 60*time.Second, 100*time.Millisecond, "every event routed")
	tenants := tenantsByMetric(t, reader)
	for _, name := range []string{"herald.router.events", "herald.router.deliveries", "herald.router.documents"} {
		require.Contains(t, tenants, name)
		require.Equal(t, maxTenants+1, len(tenants[name]), "%s: %d tenants and other", name, maxTenants)
		require.Contains(t, tenants[name], telemetry.Other, name)
	}
}

func collect(t *testing.T, reader *sdkmetric.ManualReader) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var all []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		all = append(all, sm.Metrics...)
	}
	return all
}

func sum(t *testing.T, reader *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var total int64
	for _, m := range collect(t, reader) {
		if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
			for _, dp := range s.DataPoints {
				total += dp.Value
			}
		}
	}
	return total
}

// tenantsByMetric lists the tenant label values of every counter.
func tenantsByMetric(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	for _, m := range collect(t, reader) {
		s, ok := m.Data.(metricdata.Sum[int64])
		if !ok {
			continue
		}
		for _, dp := range s.DataPoints {
			if v, ok := dp.Attributes.Value("tenant"); ok {
				if out[m.Name] == nil {
					out[m.Name] = map[string]bool{}
				}
				out[m.Name][v.AsString()] = true
			}
		}
	}
	return out
}
