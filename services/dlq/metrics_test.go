package dlq_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/dlq/alert"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// A publisher shapes the reason of every invalid event it sends; 300 of
// them, each worded differently, still make a few reason series.
func TestDeadLetterReasonsMakeBoundedSeries(t *testing.T) {
	t.Parallel()
	const entries = 300
	b := setup(t)
	ctx := heraldtest.Context(t)
	reader := sdkmetric.NewManualReader()
	svc, err := dlq.New(b.nats.JS, dlq.Config{Sweep: dlq.SweepConfig{Interval: -1},
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })

	for i := range entries {
		msg := nats.NewMsg(deadletter.Subject("ORDERS", "router"))
		msg.Data = []byte(`{}`)
		msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("entry-%d", i))
		msg.Header.Set(deadletter.HeaderStream, "ORDERS")
		msg.Header.Set(deadletter.HeaderConsumer, "router")
		msg.Header.Set(deadletter.HeaderReason, fmt.Sprintf("invalid event: data: decimal [%s] is not a string",
			strings.Repeat("1, ", i%40+1)))
		_, err := b.nats.JS.PublishMsg(ctx, msg)
		require.NoError(t, err)
	}

	var reasons map[string]int64
	require.Eventually(t, func() bool {
		reasons = heraldtest.Counts(t, reader, "herald.dlq.entries", "reason")
		return heraldtest.Total(reasons) == entries
	}, 30*time.Second, 100*time.Millisecond, "every entry counted")
	require.Equal(t, map[string]int64{alert.KindInvalidEvent: entries}, reasons)
}
