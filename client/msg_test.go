package client_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/telemetry"
)

// The message is what Herald reads: the event's subject, its JSON, a
// Nats-Msg-Id no other tenant can guess (event.MsgID), the structured
// content type, and no trace headers when there is no trace.
func TestMsgIsWhatHeraldReads(t *testing.T) {
	t.Parallel()
	d := sampleStock(t)
	ev := client.LowStock(acme, d.Stock, d.Recipients...)
	want, err := ev.Build()
	require.NoError(t, err)

	msg, err := ev.Msg(t.Context())
	require.NoError(t, err)
	require.Equal(t, "inventory.low_stock", msg.Subject)
	require.Equal(t, want, msg.Data)
	require.Equal(t, nats.Header{
		"Nats-Msg-Id":  {event.MsgID("acme", ev.ID(), want)},
		"content-type": {"application/cloudevents+json"},
	}, msg.Header)
}

// The caller's trace goes with the message in W3C headers, lower-case as
// Herald's own publishers write them, and Herald's carrier reads back the
// same span and baggage: the router's span continues the publisher's.
func TestMsgCarriesTheCallersTrace(t *testing.T) {
	t.Parallel()
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	state, err := trace.ParseTraceState("vendor=abc")
	require.NoError(t, err)
	parent = parent.WithTraceState(state)
	member, err := baggage.NewMember("order", "PO-2026-0042")
	require.NoError(t, err)
	bag, err := baggage.New(member)
	require.NoError(t, err)
	ctx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(t.Context(), parent), bag)

	d := sampleOrder(t)
	msg, err := client.OrderCreated(acme, d.Order, d.Recipients...).Msg(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, msg.Header["traceparent"])
	require.Equal(t, []string{"vendor=abc"}, msg.Header["tracestate"])
	require.Equal(t, []string{"order=PO-2026-0042"}, msg.Header["baggage"])

	read := telemetry.Propagator.Extract(context.Background(), telemetry.Header(msg.Header))
	require.Equal(t, parent.WithRemote(true), trace.SpanContextFromContext(read))
	require.Equal(t, "PO-2026-0042", baggage.FromContext(read).Member("order").Value())
}
