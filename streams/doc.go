// Package streams declares every JetStream stream, consumer, key-value bucket
// and object store Herald uses, as JSON files in the server's wire format —
// the same files an operator passes to the stock CLI:
//
//	nats stream add --config streams/ORDERS/stream.json
//	nats consumer add ORDERS --config streams/ORDERS/consumers/router.json
//
// Key-value buckets and object stores are streams too (KV_<bucket>,
// OBJ_<bucket>), declared with the settings the client libraries give them.
//
// Herald embeds these files and applies them at start-up with Apply: what is
// missing is created, what differs is updated, and a change the server
// refuses is reported with the fields that differ — never skipped in silence.
package streams
