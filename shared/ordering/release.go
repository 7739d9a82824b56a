package ordering

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/telemetry"
)

// HeaderReleased, on a parked delivery published again, says which
// revision's settlement released it and how: its next attempt tells it.
const HeaderReleased = "Herald-Released"

// Settler settles a revision in its sequence (Redis.Settle).
type Settler interface {
	Settle(ctx context.Context, sequence, member string) (*Released, error)
}

// Release settles d — settled as how ("delivered", "dead-lettered") — in
// its sequence and publishes the revision parked behind it again, if one
// is; it returns that revision's notification id, "" when none waited. Every
// service that settles an ordered delivery for good calls it: the
// delivery worker once it is sent or given up, the renderer when its
// document is never rendered. A release that fails is to be retried by
// settling d again: the parked copy stays until its own member settles.
//
// A delivery without a sequence, or naming no order (one forged so), is in
// no sequence: nothing is settled.
func Release(ctx context.Context, seqs Settler, js jetstream.JetStream, d notification.Delivery, how string) (string, error) {
	if d.Sequence == nil || d.Order == nil {
		return "", nil
	}
	r, err := seqs.Settle(ctx, d.Sequence.Key, d.DedupeKey)
	if err != nil || r == nil {
		return "", err
	}
	return republish(ctx, js, d, r, how)
}

// republish publishes the released delivery again on its subject, with a
// message id of its own and its releaser's, so that two releases by one
// settlement (a redelivered copy settling again) are one message.
func republish(ctx context.Context, js jetstream.JetStream, by notification.Delivery, r *Released, how string) (string, error) {
	next, err := notification.Decode(r.Data)
	if err != nil {
		return "", fmt.Errorf("ordering: parked delivery %s: %w", r.Member, err)
	}
	msg := nats.NewMsg(notification.Subject(next.Channel, next.Priority, next.Tenant))
	msg.Data = r.Data
	msg.Header.Set(jetstream.MsgIDHeader, "released:"+next.DedupeKey+":"+by.ID)
	msg.Header.Set(HeaderReleased, fmt.Sprintf("released: revision %d %s", by.Order.Revision, how))
	if _, err := telemetry.PublishMsg(ctx, js, msg); err != nil {
		return "", fmt.Errorf("ordering: publishing parked delivery %s: %w", next.ID, err)
	}
	return next.ID, nil
}
