package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/telemetry"
)

func TestHeaderCarrierFindsTraceContextWhateverItsCase(t *testing.T) {
	t.Parallel()
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, name := range []string{"traceparent", "Traceparent", "TRACEPARENT"} {
		h := nats.Header{}
		h[name] = []string{parent} // as sent, not canonicalised
		sc := trace.SpanContextFromContext(telemetry.Propagator.Extract(context.Background(), telemetry.Header(h)))
		require.True(t, sc.IsRemote(), name)
		require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String(), name)
	}

	h := telemetry.Header(nats.Header{"Traceparent": {"stale"}})
	h.Set("traceparent", parent)
	require.Equal(t, nats.Header{"traceparent": {parent}}, nats.Header(h), "one value, under the propagator's name")
}

func TestPublishSpanCarriesItsContextInTheHeaders(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, root := tp.Tracer("test").Start(context.Background(), "root")

	msg := nats.NewMsg("orders.created")
	msg.Data = []byte(`{}`)
	msg.Header.Set("Nats-Msg-Id", "evt-1")
	_, span := telemetry.StartPublish(ctx, msg)
	telemetry.End(span, nil)
	root.End()

	sc := trace.SpanContextFromContext(telemetry.Propagator.Extract(context.Background(), telemetry.Header(msg.Header)))
	require.Equal(t, span.SpanContext().SpanID(), sc.SpanID(), "the consumer's parent is the publish span")
	require.Equal(t, root.SpanContext().TraceID(), sc.TraceID())

	ended := rec.Ended()
	require.Len(t, ended, 2)
	pub := ended[0]
	require.Equal(t, "publish orders.created", pub.Name())
	require.Equal(t, trace.SpanKindProducer, pub.SpanKind())
	attrs := map[string]string{}
	for _, kv := range pub.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	require.Equal(t, "nats", attrs["messaging.system"])
	require.Equal(t, "orders.created", attrs["messaging.destination.name"])
	require.Equal(t, "send", attrs["messaging.operation.type"])
	require.Equal(t, "evt-1", attrs["messaging.message.id"])
}

func TestPublishWithoutATracedContextRecordsNothing(t *testing.T) {
	t.Parallel()
	msg := nats.NewMsg("orders.created")
	_, span := telemetry.StartPublish(context.Background(), msg)
	require.False(t, span.IsRecording())
	require.Empty(t, msg.Header.Get("traceparent"))
}

func TestTracingIsOnlyOnWhenTheEnvironmentAsks(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	require.False(t, telemetry.TracingEnabled(env()))
	require.True(t, telemetry.TracingEnabled(env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")))
	require.True(t, telemetry.TracingEnabled(env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/v1/traces")))
	require.True(t, telemetry.TracingEnabled(env("OTEL_TRACES_EXPORTER", "otlp")))
	require.False(t, telemetry.TracingEnabled(env("OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")))
	require.False(t, telemetry.TracingEnabled(env("OTEL_SDK_DISABLED", "true", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")))

	_, err := telemetry.NewTracerProvider(context.Background(), "herald", env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"))
	require.EqualError(t, err, `OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" is not supported (want http/protobuf or grpc)`)
	_, err = telemetry.NewTracerProvider(context.Background(), "herald", env("OTEL_TRACES_EXPORTER", "zipkin"))
	require.EqualError(t, err, `OTEL_TRACES_EXPORTER: "zipkin" is not supported (want otlp or none)`)
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		tp, err := telemetry.NewTracerProvider(context.Background(), "herald", env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", protocol))
		require.NoError(t, err, protocol)
		require.NoError(t, tp.Shutdown(context.Background()))
	}
}

func TestLogsCarryTheTraceID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil))).With("service", "router")
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "route")
	log.InfoContext(ctx, "event routed")
	log.Info("no trace here")
	span.End()

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &second))
	require.Equal(t, span.SpanContext().TraceID().String(), first["trace_id"])
	require.Equal(t, span.SpanContext().SpanID().String(), first["span_id"])
	require.Equal(t, "router", first["service"])
	require.NotContains(t, second, "trace_id")
}
