package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// A request is a server span named by its route, continuing the caller's
// trace; what it publishes carries that trace on to the router. No span
// repeats the key.
func TestARequestContinuesItsCallersTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	b := setup(t, api.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"

	got := b.do(t, http.MethodPost, "/v1/events", acmeSend, sampleOrder(t),
		"Traceparent", fmt.Sprintf("00-%s-%s-01", traceID, parentID))
	require.Equal(t, http.StatusAccepted, got.status, got.body)

	var server, publish sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			server = s
		case trace.SpanKindProducer:
			publish = s
		}
		for _, a := range s.Attributes() {
			require.NotContains(t, a.Value.Emit(), strings.TrimPrefix(acmeSend, "hk_"), "a span repeats the key")
		}
	}
	require.NotNil(t, server, "no server span")
	require.Equal(t, "POST /v1/events", server.Name())
	require.Equal(t, traceID, server.SpanContext().TraceID().String())
	require.Equal(t, parentID, server.Parent().SpanID().String())
	attrs := map[string]string{}
	for _, a := range server.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	require.Equal(t, "202", attrs["http.response.status_code"])
	require.Equal(t, "/v1/events", attrs["http.route"])

	require.NotNil(t, publish, "no publish span")
	require.Equal(t, server.SpanContext().SpanID(), publish.Parent().SpanID())
	msgs := heraldtest.StreamMessages(t, b.nats.JS, "ORDERS")
	require.Len(t, msgs, 1)
	require.Contains(t, msgs[0].Header.Get("traceparent"), traceID, "the router continues the same trace")
}
