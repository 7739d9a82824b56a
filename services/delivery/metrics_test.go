package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email/maildir"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Deliveries for more tenants than metrics.max_tenants are counted, the
// later tenants together as "other".
func TestDeliveryMetricsBoundTenants(t *testing.T) {
	t.Parallel()
	const deliveries, maxTenants = 40, 5
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	sink, err := maildir.New(t.TempDir())
	require.NoError(t, err)
	reader := sdkmetric.NewManualReader()
	svc, err := delivery.New(n.JS, delivery.Config{
		From: "Orders <orders@acme.example>", Providers: []delivery.Provider{{Name: "maildir", Provider: sink}},
		Locker: heraldtest.Locker(t), Concurrency: 4,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Tenants: telemetry.NewTenantLabels(maxTenants),
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	for i := range deliveries {
		tenant := fmt.Sprintf("t%d", i)
		key := notification.Key{Tenant: tenant, Subject: fmt.Sprintf("evt-%d", i), Document: "low_stock",
			Channel: event.ChannelEmail, Recipient: "almacen@acme.example"}.String()
		body, err := json.Marshal(notification.Delivery{
			ID: notification.ID(key), DedupeKey: key, Tenant: tenant, Channel: event.ChannelEmail,
			Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: "almacen@acme.example"},
			Template: "low_stock", Locale: "en", Stock: &event.Stock{SKU: "MILK-1L", Warehouse: "SEV-01", OnHand: "14"},
		})
		require.NoError(t, err)
		msg := nats.NewMsg(notification.Subject(event.ChannelEmail, notification.PriorityNormal, tenant))
		msg.Data = body
		msg.Header.Set(jetstream.MsgIDHeader, key)
		_, err = n.JS.PublishMsg(ctx, msg)
		require.NoError(t, err)
	}

	tenants := map[string]bool{}
	require.Eventually(t, func() bool {
		clear(tenants)
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		var delivered int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				s, ok := m.Data.(metricdata.Sum[int64])
				if !ok || m.Name != "herald.deliveries" {
					continue
				}
				for _, dp := range s.DataPoints {
					v, _ := dp.Attributes.Value("tenant")
					tenants[v.AsString()] = true
					if o, _ := dp.Attributes.Value("outcome"); o.AsString() == "delivered" {
						delivered += dp.Value
					}
				}
			}
		}
		return delivered == deliveries
	}, 60*time.Second, 100*time.Millisecond, "every delivery sent")
	require.Len(t, tenants, maxTenants+1, "%d tenants and other: %v", maxTenants, tenants)
	require.True(t, tenants[telemetry.Other])
}
