package client_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/telemetry"
)

// startRouter runs Herald's real router on n, with its default routes and
// every channel, tracing, until the test ends.
func startRouter(t *testing.T, n *heraldtest.NATS) {
	t.Helper()
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	r, err := router.New(n.JS, router.Config{Channels: event.Channels, TracerProvider: tp})
	require.NoError(t, err)
	require.NoError(t, r.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })
}

// What the client publishes, the router routes — one delivery per channel
// of the warehouse, nothing dead-lettered — in the publisher's trace.
func TestTheRouterRoutesWhatTheClientPublishes(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	startRouter(t, n)
	traced := trace.ContextWithSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	}))
	d := sampleStock(t)

	_, err := client.NewNATS(n.JS).Publish(traced, client.LowStock(acme, d.Stock, d.Recipients...))
	require.NoError(t, err)

	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "NOTIFY")) == 2 }, 10*time.Second, 20*time.Millisecond)
	var subjects []string
	for _, m := range heraldtest.StreamMessages(t, n.JS, "NOTIFY") {
		subjects = append(subjects, m.Subject)
		read := trace.SpanContextFromContext(telemetry.Propagator.Extract(context.Background(), telemetry.Header(m.Header)))
		require.Equal(t, trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, read.TraceID(), "the publisher's trace")
	}
	require.ElementsMatch(t, []string{"notify.sms.critical.acme", "notify.whatsapp.critical.acme"}, subjects)
	require.Empty(t, heraldtest.StreamMessages(t, n.JS, "DLQ"))
}

// The event the client refuses, the router dead-letters — with the same
// words: the bytes of a valid event with one field spoiled, published
// around the client, get the client's error as their DLQ reason.
func TestTheRouterRefusesWhatTheClientRefusesInTheSameWords(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	startRouter(t, n)
	d := sampleOrder(t)
	valid, err := client.OrderCreated(acme, d.Order, d.Recipients...).Build()
	require.NoError(t, err)
	d.Order.Kind = "barter"
	_, refused := client.OrderCreated(acme, d.Order, d.Recipients...).Build()
	require.Error(t, refused)

	msg := nats.NewMsg("orders.created")
	msg.Data = bytes.Replace(valid, []byte(`"kind":"purchase"`), []byte(`"kind":"barter"`), 1)
	require.NotEqual(t, valid, msg.Data)
	msg.Header.Set(jetstream.MsgIDHeader, "spoiled")
	_, err = n.JS.PublishMsg(t.Context(), msg)
	require.NoError(t, err)

	require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == 1 }, 10*time.Second, 20*time.Millisecond)
	entry := heraldtest.StreamMessages(t, n.JS, "DLQ")[0]
	require.Equal(t, refused.Error(), entry.Header.Get(deadletter.HeaderReason))
}

// An event the publisher already has as JSON is checked as the router
// checks it: what the router dead-letters, FromJSON refuses with the
// router's reason — every field at fault, a JSON number where a decimal
// string is due and a key in another case among them.
func TestFromJSONRefusesWhatTheRouterDeadLettersInItsWords(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	startRouter(t, n)
	raw, err := os.ReadFile("../examples/events/order.created.json")
	require.NoError(t, err)
	spoil := func(id string, edits ...[2]string) []byte {
		s := strings.Replace(string(raw), "evt-2026-11-30-0001", id, 1)
		for _, e := range edits {
			require.Equal(t, 1, strings.Count(s, e[0]), e[0])
			s = strings.Replace(s, e[0], e[1], 1)
		}
		return []byte(s)
	}
	numberForDecimal := [2]string{`"net": "166.80"`, `"net": 166.80`}
	keyInAnotherCase := [2]string{`"email": "compras@frutasdelsur.example"`, `"email": "compras@frutasdelsur.example", "Email": "ceo@frutasdelsur.example"`}
	lowerCaseISOCode := [2]string{`"currency": "EUR"`, `"currency": "eur"`}

	_, err = client.FromJSON(raw, false).Build()
	require.NoError(t, err, "the sample is valid")
	for i, payload := range [][]byte{
		spoil("evt-number", numberForDecimal),
		spoil("evt-case", keyInAnotherCase),
		spoil("evt-three", numberForDecimal, keyInAnotherCase, lowerCaseISOCode),
	} {
		_, refused := client.FromJSON(payload, false).Build()
		require.Error(t, refused, "input %d", i)
		_, err := n.JS.PublishMsg(t.Context(), &nats.Msg{Subject: "orders.created", Data: payload})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == i+1 }, 10*time.Second, 20*time.Millisecond)
		require.Equal(t, refused.Error(), heraldtest.StreamMessages(t, n.JS, "DLQ")[i].Header.Get(deadletter.HeaderReason), "input %d", i)
	}
}
