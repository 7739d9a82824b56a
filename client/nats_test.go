package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Published twice — a retry after a lost acknowledgement, say — an event
// is stored once, and the second publish is told it was a duplicate.
func TestNATSStoresAnEventOnceAndReportsTheCopy(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	pub := client.NewNATS(n.JS)
	d := sampleOrder(t)
	ev := client.OrderCreated(acme, d.Order, d.Recipients...)

	first, err := pub.Publish(t.Context(), ev)
	require.NoError(t, err)
	require.Equal(t, client.Receipt{ID: ev.ID(), Subject: "orders.created", Stream: "ORDERS", Sequence: 1}, first)
	again, err := pub.Publish(t.Context(), ev)
	require.NoError(t, err)
	require.Equal(t, client.Receipt{ID: ev.ID(), Subject: "orders.created", Stream: "ORDERS", Sequence: 1, Duplicate: true}, again)

	stored := heraldtest.StreamMessages(t, n.JS, "ORDERS")
	require.Len(t, stored, 1)
	want, err := ev.Build()
	require.NoError(t, err)
	require.Equal(t, want, stored[0].Data)
	require.Equal(t, event.MsgID("acme", ev.ID(), want), stored[0].Header.Get(jetstream.MsgIDHeader))
	require.Equal(t, "application/cloudevents+json", stored[0].Header.Get("content-type"))
}

// Stock alerts go to INVENTORY; a tenant-bound publisher's events to the
// subject that carries its tenant, which the streams take too.
func TestNATSPublishesOnEachEventsSubject(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	pub := client.NewNATS(n.JS)
	stock := sampleStock(t)
	order := sampleOrder(t)
	bound := acme
	bound.TenantSubject = true

	got, err := pub.Publish(t.Context(), client.LowStock(acme, stock.Stock, stock.Recipients...))
	require.NoError(t, err)
	require.Equal(t, "INVENTORY", got.Stream)
	require.Equal(t, "inventory.low_stock", got.Subject)
	got, err = pub.Publish(t.Context(), client.OrderShipped(bound, order.Order, order.Recipients...))
	require.NoError(t, err)
	require.Equal(t, "ORDERS", got.Stream)
	stored := heraldtest.StreamMessages(t, n.JS, "ORDERS")
	require.Len(t, stored, 1)
	require.Equal(t, "orders.shipped.acme", stored[0].Subject)
}

// An invalid event is refused before anything is sent.
func TestNATSPublishesNothingInvalid(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	d := sampleOrder(t)
	d.Order.Currency = "euro"
	_, err := client.NewNATS(n.JS).Publish(t.Context(), client.OrderCreated(acme, d.Order, d.Recipients...))
	var invalid *event.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.NotErrorIs(t, err, client.ErrRetryable)
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "ORDERS"))
}

// With no stream to take the event (Herald's streams not applied yet, or
// JetStream unavailable), nothing is stored and trying again may work.
func TestNATSWithoutAStreamIsRetryable(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	d := sampleOrder(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := client.NewNATS(n.JS).Publish(ctx, client.OrderCreated(acme, d.Order, d.Recipients...))
	require.ErrorIs(t, err, client.ErrRetryable)
	require.ErrorIs(t, err, jetstream.ErrNoStreamResponse)
	require.ErrorContains(t, err, "herald: publishing orders.created")
}

// A publish inside the caller's span is a producer span of its trace, and
// the stored message carries that span's context, as Herald's consumers
// read it.
func TestNATSTracesThePublish(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	ctx, parent := tp.Tracer("order-service").Start(t.Context(), "create order")
	d := sampleOrder(t)
	ev := client.OrderCreated(acme, d.Order, d.Recipients...)

	_, err := client.NewNATS(n.JS).Publish(ctx, ev)
	require.NoError(t, err)
	parent.End()

	ended := spans.Ended()
	require.Len(t, ended, 2)
	publish := ended[0]
	require.Equal(t, "publish orders.created", publish.Name())
	require.Equal(t, trace.SpanKindProducer, publish.SpanKind())
	require.Equal(t, parent.SpanContext().SpanID(), publish.Parent().SpanID())
	require.Contains(t, publish.Attributes(), attribute.String("messaging.message.id", ev.ID()))
	require.Contains(t, publish.Attributes(), attribute.Bool("messaging.nats.duplicate", false))

	stored := heraldtest.StreamMessages(t, n.JS, "ORDERS")
	require.Len(t, stored, 1)
	read := trace.SpanContextFromContext(telemetry.Propagator.Extract(context.Background(), telemetry.Header(stored[0].Header)))
	require.Equal(t, publish.SpanContext().TraceID(), read.TraceID())
	require.Equal(t, publish.SpanContext().SpanID(), read.SpanID())
}
