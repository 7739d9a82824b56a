// Package client is what a Go service imports to publish events to Herald:
// typed builders for the events Herald reads, the router's own validation
// at build time — so a bad event fails in the publisher's tests, not in the
// dead-letter stream — and publishers over NATS JetStream or the HTTP API.
//
// Build an event from shared/event's types; nothing is sent yet:
//
//	ev := client.OrderCreated(client.Envelope{Tenant: "acme", Source: "/erp/orders"},
//		order, event.Recipient{Role: "supplier", Email: "olga@zarya.example", Channels: []event.Channel{event.ChannelEmail}})
//
// Validation runs once, when the event is made: the envelope and data are
// encoded as Herald will read them, then decoded by event.Decode and the
// data check of the event's family — the very code the router runs. An
// invalid event's error is an *event.ValidationError listing every problem
// in the router's words; Build, Msg and Publish return it.
//
// Publish it over NATS, waiting for JetStream's acknowledgement:
//
//	pub := client.NewNATS(js)
//	receipt, err := pub.Publish(ctx, ev)
//
// or over the HTTP API with a tenant's key (client.NewHTTP). Either way the
// event id is the dedupe key: publishing the same *Event again — after a
// timeout, say — stores nothing new and reports Receipt.Duplicate. Errors
// after which trying again may succeed match ErrRetryable.
//
// An Event is also what a transactional outbox stores: its Msg method gives
// the NATS message — subject, structured JSON body, Nats-Msg-Id and the
// caller's trace context — without sending it.
package client
