// Package e2e drives Herald from the outside, as its users do: events are
// published to a real embedded NATS server, the whole pipeline runs in
// process exactly as `herald dev` runs it, and the tests read what came out —
// the .eml files in the mail sink, the DLQ and ADVISORIES streams, /readyz
// and /metrics.
package e2e
