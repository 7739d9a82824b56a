package consumer

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/telemetry"
)

// Traced runs each message in a "process <subject>" consumer span that
// continues the trace its publisher put in the headers, and records how
// the message was settled; a retry or a dead letter marks the span failed.
func Traced(tp trace.TracerProvider, consumer string) Middleware {
	tracer := tp.Tracer(telemetry.Scope)
	return func(h Handler) Handler {
		return func(ctx context.Context, msg jetstream.Msg) Outcome {
			ctx, span := telemetry.StartProcess(ctx, tracer, msg, consumer)
			o := h(ctx, msg)
			span.SetAttributes(attribute.String("herald.settled", o.String()))
			telemetry.End(span, o.Reason())
			return o
		}
	}
}

// Counted counts settled messages:
//
//	herald_consumer_settled_total{stream,consumer,outcome}  outcome: done, retry, gave_up, left
func Counted(mp metric.MeterProvider, stream, consumer string) (Middleware, error) {
	settled, err := mp.Meter("github.com/heraldhq/herald/shared/consumer").Int64Counter("herald.consumer.settled",
		metric.WithDescription("Messages settled by Herald's handlers, by stream, consumer and outcome: done (acknowledged), retry (redelivered after a delay), gave_up (dead-lettered), left (a shutdown ran out of time)."))
	if err != nil {
		return nil, err
	}
	var attrs [4]metric.MeasurementOption
	for i := range attrs {
		attrs[i] = metric.WithAttributes(attribute.String("stream", stream), attribute.String("consumer", consumer),
			attribute.String("outcome", Outcome{settle: settlement(i)}.String()))
	}
	return func(h Handler) Handler {
		return func(ctx context.Context, msg jetstream.Msg) Outcome {
			o := h(ctx, msg)
			settled.Add(ctx, 1, attrs[o.settle])
			return o
		}
	}, nil
}
