package notification

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/telemetry"
)

// AckTimeout bounds the wait for a stream's acknowledgement. An ack lost in
// a failover (the node that took the message died) never comes, and
// nats.go's async futures have no deadline of their own; waiting forever
// would hold the message being handled hostage.
const AckTimeout = 10 * time.Second

// Publish sends deliveries to NOTIFY, each on its subject with Nats-Msg-Id
// set to its dedupe key, asynchronously; then waits until the stream has
// stored (or recognised as a duplicate) every one, for AckTimeout at most —
// republishing after a timeout is safe, the ids deduplicate. The acks come
// back in the deliveries' order.
func Publish(ctx context.Context, js jetstream.JetStream, deliveries []Delivery) ([]*jetstream.PubAck, error) {
	msgs := make([]*nats.Msg, len(deliveries))
	for i, d := range deliveries {
		msg, err := Msg(d)
		if err != nil {
			return nil, err
		}
		msgs[i] = msg
	}
	return PublishMsgs(ctx, js, msgs)
}

// Msg is the message a delivery is published as: its JSON, on its
// subject, with Nats-Msg-Id set to its dedupe key.
func Msg(d Delivery) (*nats.Msg, error) {
	body, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(Subject(d.Channel, d.Priority, d.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, d.DedupeKey)
	return msg, nil
}

// PublishMsgs is Publish for deliveries already made into messages (Msg),
// for a caller that has measured them against the max payload: it sends
// the bytes it measured instead of encoding every delivery again.
func PublishMsgs(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg) ([]*jetstream.PubAck, error) {
	return telemetry.PublishMsgs(ctx, js, msgs, AckTimeout)
}
