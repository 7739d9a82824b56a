package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
)

// EventsBucket is the KV bucket of the events the router has routed
// (streams/KV_events), keyed by tenant and event id.
//
// Event dedupe is the router's, per tenant, not the input streams'. A
// stream's duplicate window compares Nats-Msg-Ids across every tenant's
// messages and no permission can restrict a header, so a window keyed by
// anything a publisher writes is a space any tenant can write into: had
// the router trusted it, a tenant could have had another's event dropped
// by publishing its id first. Here the tenant of the key is the event's,
// which on a tenant's own subject must be that subject's tenant (admit),
// so a tenant's publisher can only ever mark its own events as seen.
const EventsBucket = "events"

// seen is what the router remembers of an event it routed.
type seen struct {
	Stream   string `json:"stream"`
	Sequence uint64 `json:"sequence"`
}

// eventKey is the key of a tenant's event in EventsBucket. The id is
// digested: ids may hold dots, which a key would read as separators.
func eventKey(ev event.Event) string {
	sum := sha256.Sum256([]byte(ev.ID))
	return ev.Tenant + "." + hex.EncodeToString(sum[:])
}

// routedBefore reports whether the tenant's event was routed already: a
// copy published again, or the same event over NATS and over HTTP.
func (s *Service) routedBefore(ctx context.Context, ev event.Event) (bool, error) {
	_, err := s.seen.Get(ctx, eventKey(ev))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s's event %s from %s: %w", ev.Tenant, ev.ID, EventsBucket, err)
	}
	return true, nil
}

// remember records a routed event. It comes after the deliveries are
// stored: a crash before it routes the event again, and what that
// republishes the duplicate windows of NOTIFY and DOCS, or the delivery
// ledger, drop. Two copies routed at once are dropped the same way.
func (s *Service) remember(ctx context.Context, ev event.Event, md *jetstream.MsgMetadata) error {
	var value []byte
	if md != nil {
		value, _ = json.Marshal(seen{Stream: md.Stream, Sequence: md.Sequence.Stream})
	}
	_, err := s.seen.Create(ctx, eventKey(ev), value)
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("recording %s's event %s in %s: %w", ev.Tenant, ev.ID, EventsBucket, err)
	}
	return nil
}
