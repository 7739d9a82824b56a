package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/telemetry"
)

// One event makes one trace: from the publisher's span, through routing,
// rendering and release, to each provider call — carried hop to hop in
// NATS headers.
func TestOneEventIsOneTraceFromPublisherToProvider(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	p := startPipeline(t, func(c *app.Config) { c.TracerProvider = tp })

	// The publisher is a microservice with its own tracing.
	ctx, root := tp.Tracer("publisher").Start(heraldtest.Context(t), "order service: create order")
	msg := nats.NewMsg("orders.created")
	msg.Data = sample(t, "order.created.json", nil)
	msg.Header.Set(jetstream.MsgIDHeader, "evt-2026-11-30-0001")
	_, err := telemetry.PublishMsg(ctx, p.js, msg)
	require.NoError(t, err)
	root.End()
	traceID := root.SpanContext().TraceID()
	p.settle(t)
	require.Len(t, p.mail(t), 2)

	var spans map[trace.SpanID]sdktrace.ReadOnlySpan
	var sends []sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool { // handler spans end just after their ack
		spans, sends = map[trace.SpanID]sdktrace.ReadOnlySpan{}, nil
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() != traceID {
				continue
			}
			spans[s.SpanContext().SpanID()] = s
			if strings.HasPrefix(s.Name(), "send ") {
				sends = append(sends, s)
			}
		}
		return len(sends) == 2 && countNamed(spans, "process notify.email.normal.acme") == 2
	}, 10*time.Second, 20*time.Millisecond, "every span of the event's trace ends")

	want := []string{ // from the provider call up to the publisher
		"send maildir",
		"deliver email",
		"process notify.email.normal.acme",
		"publish notify.email.normal.acme",
		"process docs.render.purchase_order.acme",
		"publish docs.render.purchase_order.acme",
		"route",
		"process orders.created",
		"publish orders.created",
		"order service: create order",
	}
	for _, send := range sends {
		var chain []string
		for s := send; ; {
			chain = append(chain, s.Name())
			parent, ok := spans[s.Parent().SpanID()]
			if !s.Parent().IsValid() || !ok {
				require.False(t, s.Parent().IsValid(), "%s has a parent outside the trace", s.Name())
				break
			}
			s = parent
		}
		require.Equal(t, want, chain)
		require.Equal(t, trace.SpanKindClient, send.SpanKind())
	}

	attrs := func(name, consumer string) map[string]string {
		for _, s := range spans {
			a := map[string]string{}
			for _, kv := range s.Attributes() {
				a[string(kv.Key)] = kv.Value.Emit()
			}
			if s.Name() == name && (consumer == "" || a["messaging.consumer.group.name"] == consumer) {
				return a
			}
		}
		t.Fatalf("no span %q", name)
		return nil
	}
	process := attrs("process orders.created", "router")
	require.Equal(t, "nats", process["messaging.system"])
	require.Equal(t, "process", process["messaging.operation.type"])
	require.Equal(t, "orders.created", process["messaging.destination.name"])
	require.Equal(t, "evt-2026-11-30-0001", process["messaging.message.id"])
	require.Equal(t, "ORDERS", process["messaging.nats.stream"])

	release := attrs("publish notify.email.normal.acme", "")
	require.Equal(t, "send", release["messaging.operation.type"])
	require.Equal(t, "NOTIFY", release["messaging.nats.stream"])
	require.Contains(t, release["messaging.message.id"], "acme:PO-2026-0042:1:purchase_order:email:", "the dedupe key")

	require.Equal(t, "email-normal", attrs("process notify.email.normal.acme", "email-normal")["messaging.consumer.group.name"])
	require.Equal(t, "order.created", attrs("route", "")["cloudevents.event_type"])
	require.Equal(t, "acme/PO-2026-0042/purchase_order-r1.pdf", attrs("render purchase_order", "")["herald.document.object"])
	send := attrs("send maildir", "")
	require.Equal(t, "maildir", send["herald.provider"])
	require.NotEmpty(t, send["herald.provider_message_id"])
}

func countNamed(spans map[trace.SpanID]sdktrace.ReadOnlySpan, name string) int {
	n := 0
	for _, s := range spans {
		if s.Name() == name {
			n++
		}
	}
	return n
}

// After a run, /metrics counts what happened: events in by outcome,
// deliveries by provider and outcome, documents, dead letters, and the
// consumers' backlog.
func TestMetricsCountARun(t *testing.T) {
	t.Parallel()
	p := startPipeline(t)
	created := sample(t, "order.created.json", nil)
	p.publish(t, "orders.created", "evt-2026-11-30-0001", created)
	p.publish(t, "orders.created", "evt-2026-11-30-0001", created) // a duplicate: ORDERS drops it
	p.publish(t, "orders.updated", "evt-2026-11-30-0002", sample(t, "order.updated.json", nil))
	p.publish(t, "orders.created", "evt-broken", []byte(`{"specversion":"1.0","id":"evt-broken"}`))
	p.settle(t)

	var families map[string]*dto.MetricFamily
	require.Eventually(t, func() bool { // the DLQ service counts the entry after the router wrote it
		families = p.scrape(t)
		return sum(families, "herald_dlq_entries_total", nil) == 1
	}, 10*time.Second, 50*time.Millisecond)

	require.Equal(t, 2.0, sum(families, "herald_router_events_total", map[string]string{"outcome": "routed", "tenant": "acme"}))
	require.Equal(t, 1.0, sum(families, "herald_router_events_total", map[string]string{"outcome": "invalid"}))
	require.Equal(t, 4.0, sum(families, "herald_router_deliveries_total", map[string]string{"channel": "email"}),
		"2 recipients × 2 revisions")
	require.Equal(t, 2.0, sum(families, "herald_documents_total", map[string]string{"outcome": "rendered", "type": "purchase_order"}))
	require.Equal(t, 4.0, sum(families, "herald_deliveries_total", map[string]string{"outcome": "delivered", "provider": "maildir", "channel": "email"}))
	require.Zero(t, sum(families, "herald_deliveries_total", map[string]string{"outcome": "duplicate_sent"}))
	require.Equal(t, 4.0, histogramCount(families, "herald_delivery_latency_seconds"))
	require.Equal(t, 4.0, histogramCount(families, "herald_notification_latency_seconds"), "end to end, from ORDERS")
	require.Equal(t, 1.0, sum(families, "herald_dlq_depth", map[string]string{"stream": "ORDERS", "consumer": "router"}))
	// The fair loops' gauges are what their last discovery (every second)
	// found: a scrape just after the pipeline settled may still see the
	// backlog it had.
	consumers := [][2]string{{"ORDERS", "router"}, {"DOCS", "pdf"}, {"NOTIFY", "email-normal"}}
	require.Eventually(t, func() bool {
		families = p.scrape(t)
		for _, c := range consumers {
			labels := map[string]string{"stream": c[0], "consumer": c[1]}
			if sum(families, "herald_consumer_pending", labels) != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 100*time.Millisecond, "no consumer has a backlog")
	for _, c := range consumers {
		labels := map[string]string{"stream": c[0], "consumer": c[1]}
		require.Equal(t, 1, count(families, "herald_consumer_pending", labels), "%v is observed", c)
		require.Zero(t, sum(families, "herald_consumer_ack_pending", labels), "%v has nothing unacknowledged", c)
	}
}

func (p *pipeline) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := heraldtest.HTTPClient(t).Get("http://" + p.dev.App.HTTPAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// matching yields the samples of a family whose labels include want.
func matching(families map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	f := families[name]
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			ok = ok && labels[k] == v
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

func sum(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	for _, m := range matching(families, name, want) {
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return total
}

func count(families map[string]*dto.MetricFamily, name string, want map[string]string) int {
	return len(matching(families, name, want))
}

func histogramCount(families map[string]*dto.MetricFamily, name string) float64 {
	total := 0.0
	for _, m := range matching(families, name, nil) {
		total += float64(m.GetHistogram().GetSampleCount())
	}
	return total
}
