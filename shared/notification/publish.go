package notification

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/telemetry"
)

// AckTimeout bounds the wait for a stream's acknowledgement. An ack lost in
// a failover (the node that took the message died) never comes, and
// nats.go's async futures have no deadline of their own; waiting forever
// would hold the message being handled hostage.
const AckTimeout = 10 * time.Second

// errNotAwaited ends the span of a publish whose answer nobody waited for.
var errNotAwaited = errors.New("acknowledgement not awaited")

// Publish sends deliveries to NOTIFY, each on its subject with Nats-Msg-Id
// set to its dedupe key, asynchronously; then waits until the stream has
// stored (or recognised as a duplicate) every one, for AckTimeout at most —
// republishing after a timeout is safe, the ids deduplicate. The acks come
// back in the deliveries' order.
func Publish(ctx context.Context, js jetstream.JetStream, deliveries []Delivery) ([]*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, AckTimeout)
	defer cancel()
	futures := make([]jetstream.PubAckFuture, 0, len(deliveries))
	spans := make([]trace.Span, 0, len(deliveries))
	answered := 0
	defer func() {
		for _, span := range spans[answered:] {
			telemetry.End(span, errNotAwaited)
		}
	}()
	for _, d := range deliveries {
		body, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		msg := nats.NewMsg(Subject(d.Channel, d.Priority, d.Tenant))
		msg.Data = body
		msg.Header.Set(jetstream.MsgIDHeader, d.DedupeKey)
		_, span := telemetry.StartPublish(ctx, msg)
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			telemetry.End(span, err)
			return nil, fmt.Errorf("publishing %s: %w", msg.Subject, err)
		}
		futures, spans = append(futures, f), append(spans, span)
	}
	acks := make([]*jetstream.PubAck, len(futures))
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			acks[i] = ack
			telemetry.EndPublish(spans[i], ack, nil)
		case err := <-f.Err():
			telemetry.EndPublish(spans[i], nil, err)
			answered = i + 1
			return nil, fmt.Errorf("publishing %s: %w", f.Msg().Subject, err)
		case <-ctx.Done():
			return nil, fmt.Errorf("publishing %s: no acknowledgement: %w", f.Msg().Subject, ctx.Err())
		}
		answered = i + 1
	}
	return acks, nil
}
