package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// observe registers gauges of c's backlog, read from the server (one
// consumer-info request per collection):
//
//	herald_consumer_pending{stream,consumer}      messages not yet delivered
//	herald_consumer_ack_pending{stream,consumer}  delivered, not yet acknowledged
//	herald_consumer_redelivered{stream,consumer}  delivered more than once, not yet acknowledged
func observe(mp metric.MeterProvider, c jetstream.Consumer) (metric.Registration, error) {
	m := mp.Meter("github.com/heraldhq/herald/shared/consumer")
	pending, err1 := m.Int64ObservableGauge("herald.consumer.pending",
		metric.WithDescription("Messages of the consumer's stream not yet delivered to it: its lag."))
	ackPending, err2 := m.Int64ObservableGauge("herald.consumer.ack_pending",
		metric.WithDescription("Messages delivered to the consumer and not yet acknowledged."))
	redelivered, err3 := m.Int64ObservableGauge("herald.consumer.redelivered",
		metric.WithDescription("Unacknowledged messages delivered to the consumer more than once."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		info, err := c.Info(ctx)
		if err != nil {
			return nil // a scrape during an outage shows no value rather than a stale one
		}
		attrs := metric.WithAttributes(attribute.String("stream", info.Stream), attribute.String("consumer", info.Name))
		o.ObserveInt64(pending, int64(info.NumPending), attrs)
		o.ObserveInt64(ackPending, int64(info.NumAckPending), attrs)
		o.ObserveInt64(redelivered, int64(info.NumRedelivered), attrs)
		return nil
	}, pending, ackPending, redelivered)
}
