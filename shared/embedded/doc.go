// Package embedded runs the servers Herald depends on inside the Herald
// process: a nats-server with JetStream on disk, and a Redis-protocol server.
// `herald dev` uses them so a developer needs nothing but Go; tests use the
// same NATS server on a random port with a temporary store.
//
// They are real servers speaking their real protocols on loopback: the stock
// `nats` CLI and any Redis client can talk to them.
package embedded
