package event

import (
	"crypto/sha256"
	"encoding/hex"
)

// MsgID is the Nats-Msg-Id Herald's publishers give an event:
// "<tenant>:<id>:<digest>", the digest being the first 128 bits of the
// SHA-256 of body, the bytes published.
//
// A stream's duplicate window compares Nats-Msg-Ids across every message
// it stores, whatever the subject, and NATS permissions cannot restrict a
// header: any publisher may send any id. An id another tenant can guess
// (the bare event id, or "<tenant>:<id>") would let that tenant, first to
// send it, have the stream drop this event as a duplicate of its own
// message. The digest is what it cannot guess without the event's bytes;
// the same bytes published again — a retry, the outbox relay after a
// crash — carry the same id and are dropped by the stream. Which copies
// are one event is not left to this id: the router drops a second copy of
// an event by its tenant and id, however it came (services/router, seen.go).
func MsgID(tenant, id string, body []byte) string {
	sum := sha256.Sum256(body)
	return tenant + ":" + id + ":" + hex.EncodeToString(sum[:16])
}
