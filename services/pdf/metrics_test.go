package pdf_test

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

	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/telemetry"
)

// blank renders every document as the same few bytes: this test is about
// what is counted, not what is drawn.
type blank struct{}

func (blank) Render(context.Context, documents.Request) ([]byte, error) {
	return []byte("%PDF-1.7 blank"), nil
}

// Documents for more tenants than metrics.max_tenants are counted, the
// later tenants together as "other".
func TestDocumentMetricsBoundTenants(t *testing.T) {
	t.Parallel()
	const requests, maxTenants = 20, 5
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	reader := sdkmetric.NewManualReader()
	svc, err := pdf.New(n.JS, pdf.Config{Renderer: blank{},
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Tenants: telemetry.NewTenantLabels(maxTenants)})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	req := request(t)
	req.Deliveries = nil
	for i := range requests {
		req.Tenant = fmt.Sprintf("t%d", i)
		req.Object = documents.ObjectName(req.Tenant, req.Order.ID, notification.PurchaseOrder, 1)
		body, err := json.Marshal(req)
		require.NoError(t, err)
		msg := nats.NewMsg(documents.Subject(req.Type, req.Tenant))
		msg.Data = body
		msg.Header.Set(jetstream.MsgIDHeader, documents.MsgID(req))
		_, err = n.JS.PublishMsg(ctx, msg)
		require.NoError(t, err)
	}

	var tenants map[string]int64
	require.Eventually(t, func() bool {
		tenants = heraldtest.Counts(t, reader, "herald.documents", "tenant")
		return heraldtest.Total(tenants) == requests
	}, 60*time.Second, 100*time.Millisecond, "every document rendered")
	require.Len(t, tenants, maxTenants+1, "%d tenants and other: %v", maxTenants, tenants)
	require.Contains(t, tenants, telemetry.Other)
}
