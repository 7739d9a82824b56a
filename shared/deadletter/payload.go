package deadletter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PayloadBucket is the object store that keeps the payloads too large to
// travel in their entry (streams/OBJ_dlq_payloads). It keeps them a day
// longer than the DLQ keeps entries, so no entry outlives its payload.
const PayloadBucket = "dlq_payloads"

// Headers of an entry whose payload is kept in PayloadBucket.
const (
	HeaderPayloadObject = "Herald-Payload-Object"
	HeaderPayloadSize   = "Herald-Payload-Size"
	HeaderPayloadSHA256 = "Herald-Payload-Sha256"
)

// payloadObject names the object that keeps a payload: one per original
// message, so writing the same dead letter twice keeps one copy.
func payloadObject(stream string, sequence uint64) string {
	return stream + "/" + strconv.FormatUint(sequence, 10)
}

// keepPayload stores the original payload in PayloadBucket and makes the
// entry point at it instead of carrying it.
func keepPayload(ctx context.Context, js jetstream.JetStream, e Entry, entry *nats.Msg) error {
	store, err := js.ObjectStore(ctx, PayloadBucket)
	if err != nil {
		return fmt.Errorf("dead letter: the %d-byte payload does not fit an entry, and bucket %s: %w", len(e.Data), PayloadBucket, err)
	}
	name := payloadObject(e.Stream, e.Sequence)
	if _, err := store.PutBytes(ctx, name, e.Data); err != nil {
		return fmt.Errorf("dead letter: keeping the %d-byte payload as %s/%s: %w", len(e.Data), PayloadBucket, name, err)
	}
	sum := sha256.Sum256(e.Data)
	entry.Header.Set(HeaderPayloadObject, name)
	entry.Header.Set(HeaderPayloadSize, strconv.Itoa(len(e.Data)))
	entry.Header.Set(HeaderPayloadSHA256, hex.EncodeToString(sum[:]))
	entry.Data = nil
	return nil
}

// Payload returns an entry's original payload: its body, or the object
// the body was kept in, checked against the size and digest the entry
// recorded.
func Payload(ctx context.Context, js jetstream.JetStream, h nats.Header, body []byte) ([]byte, error) {
	name := h.Get(HeaderPayloadObject)
	if name == "" {
		return body, nil
	}
	store, err := js.ObjectStore(ctx, PayloadBucket)
	if err != nil {
		return nil, fmt.Errorf("dead letter: payload %s: bucket %s: %w", name, PayloadBucket, err)
	}
	data, err := store.GetBytes(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("dead letter: payload %s/%s is gone (purged, or expired): %w", PayloadBucket, name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("dead letter: reading payload %s/%s: %w", PayloadBucket, name, err)
	}
	sum := sha256.Sum256(data)
	if strconv.Itoa(len(data)) != h.Get(HeaderPayloadSize) || hex.EncodeToString(sum[:]) != h.Get(HeaderPayloadSHA256) {
		// Sequences restart when a stream is recreated: the object may
		// keep another message's payload now.
		return nil, fmt.Errorf("dead letter: payload %s/%s is not the one this entry kept (size or SHA-256 differ)", PayloadBucket, name)
	}
	return data, nil
}

// DeletePayload deletes the object an entry's payload was kept in, if any.
func DeletePayload(ctx context.Context, js jetstream.JetStream, h nats.Header) error {
	name := h.Get(HeaderPayloadObject)
	if name == "" {
		return nil
	}
	store, err := js.ObjectStore(ctx, PayloadBucket)
	if err != nil {
		return fmt.Errorf("dead letter: payload %s: bucket %s: %w", name, PayloadBucket, err)
	}
	if err := store.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("dead letter: deleting payload %s/%s: %w", PayloadBucket, name, err)
	}
	return nil
}
