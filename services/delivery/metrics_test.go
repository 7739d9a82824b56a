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

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
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
	svc, err := newEmail(t, n.JS, config{ChannelConfig: email.ChannelConfig{From: "Orders <orders@acme.example>", Providers: []email.Named{{Name: "maildir", Provider: sink}}}, Config: delivery.Config{Locker: heraldtest.Locker(t), Concurrency: 4, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Tenants: telemetry.NewTenantLabels(maxTenants)}})
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

	require.Eventually(t, func() bool {
		return heraldtest.Counts(t, reader, "herald.deliveries", "outcome")["delivered"] == deliveries
	}, 60*time.Second, 100*time.Millisecond, "every delivery sent")
	tenants := heraldtest.Counts(t, reader, "herald.deliveries", "tenant")
	require.Len(t, tenants, maxTenants+1, "%d tenants and other: %v", maxTenants, tenants)
	require.Contains(t, tenants, telemetry.Other)
}
