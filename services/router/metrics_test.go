package router_test

import (
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
		return heraldtest.Total(heraldtest.Counts(t, reader, "herald.router.events", "tenant")) == events
	}, 60*time.Second, 100*time.Millisecond, "every event routed")
	for _, name := range []string{"herald.router.events", "herald.router.deliveries", "herald.router.documents"} {
		tenants := heraldtest.Counts(t, reader, name, "tenant")
		require.Len(t, tenants, maxTenants+1, "%s: %d tenants and other", name, maxTenants)
		require.Contains(t, tenants, telemetry.Other, name)
	}
}
