package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// IdempotencyBucket keeps Idempotency-Key records, declared in
// streams/KV_idempotency: <tenant>.<digest of the key> → the request's
// hash and, once it succeeded, its answer.
//
// Stripe's semantics: a request repeated with the same key and the same
// body is answered exactly as the first was, and does nothing again; the
// same key with another body is refused (422); while the first is still
// in flight, a second is refused (409). Only successes are kept: a request
// refused before it did anything, or failed, leaves no record, so trying
// again does it. The record outlives every stream's duplicate window, which
// is why JetStream's own dedupe is not enough.
const IdempotencyBucket = "idempotency"

// claimExpiry is how long a pending claim holds its key. A request holds it
// for at most three round trips to NATS (claim, publish, record or
// release), each bounded by natsTimeout; a claim older than that, with a
// margin for replicas' clocks, was left behind — by a process that died
// mid-request, or a claim the NATS client sent late, after the connection
// came back, when its request had long been answered 503. The next request
// with the key takes it over (JetStream's duplicate window still drops a
// second publish of the same event).
const claimExpiry = 4 * natsTimeout

// Outcomes of claiming a key that the caller answers with an error.
var (
	errKeyReused  = errors.New("idempotency key reused with another request")
	errInProgress = errors.New("a request with this idempotency key is in progress")
)

// record is what the bucket keeps for one key.
type record struct {
	Request   string          `json:"request"` // hash of the route and body
	Done      bool            `json:"done,omitempty"`
	Status    int             `json:"status,omitempty"`
	Answer    json.RawMessage `json:"answer,omitempty"`
	ClaimedAt time.Time       `json:"claimed_at"`
}

type idempotency struct {
	kv  jetstream.KeyValue
	ttl time.Duration
	now func() time.Time
}

// claim is the right to carry out one request, held until done or released.
type claim struct {
	store    *idempotency
	key      string
	rec      record
	revision uint64
}

// requestHash identifies a request by its route and exact body.
func requestHash(route string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(route))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// recordKey is where tenant's key is kept: hashed, as keys are free text
// and KV keys are not, under the tenant, so two tenants never share one.
func recordKey(tenant, key string) string {
	sum := sha256.Sum256([]byte(key))
	return tenant + "." + hex.EncodeToString(sum[:])
}

// claim takes tenant's key for a request. A key already done with the same
// request returns its record, to be replayed, and no claim.
func (s *idempotency) claim(ctx context.Context, tenant, key, request string) (*claim, *record, error) {
	c := &claim{store: s, key: recordKey(tenant, key), rec: record{Request: request, ClaimedAt: s.now().UTC()}}
	b, err := json.Marshal(c.rec)
	if err != nil {
		return nil, nil, err
	}
	c.revision, err = s.kv.Create(ctx, c.key, b)
	if !errors.Is(err, jetstream.ErrKeyExists) {
		if err != nil {
			return nil, nil, fmt.Errorf("idempotency: claiming: %w", err)
		}
		return c, nil, nil
	}
	kve, err := s.kv.Get(ctx, c.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// Released between the two reads: the other request failed
		// just now. Its caller may be retrying; this one can too.
		return nil, nil, errInProgress
	}
	if err != nil {
		return nil, nil, fmt.Errorf("idempotency: reading: %w", err)
	}
	var prev record
	if err := json.Unmarshal(kve.Value(), &prev); err != nil {
		return nil, nil, fmt.Errorf("idempotency: record %s: %w", c.key, err)
	}
	return s.settle(ctx, c, prev, kve.Revision())
}

// settle decides what an existing record means for a new request.
func (s *idempotency) settle(ctx context.Context, c *claim, prev record, revision uint64) (*claim, *record, error) {
	age := s.now().Sub(prev.ClaimedAt)
	switch {
	case age >= s.ttl || (!prev.Done && age >= claimExpiry):
		// Expired (a bucket kept longer than the TTL), or abandoned.
		// Two requests may try to take it over; one wins the write.
		if err := c.write(ctx, revision); err != nil {
			if isWrongRevision(err) {
				return nil, nil, errInProgress
			}
			return nil, nil, err
		}
		return c, nil, nil
	case prev.Request != c.rec.Request:
		return nil, nil, errKeyReused
	case !prev.Done:
		return nil, nil, errInProgress
	}
	return nil, &prev, nil
}

// done records the answer, so repeats of the request get it.
func (c *claim) done(ctx context.Context, status int, answer any) error {
	b, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	c.rec.Done, c.rec.Status, c.rec.Answer = true, status, b
	return c.write(ctx, c.revision)
}

func (c *claim) write(ctx context.Context, revision uint64) error {
	b, err := json.Marshal(c.rec)
	if err != nil {
		return err
	}
	if c.revision, err = c.store.kv.Update(ctx, c.key, b, revision); err != nil {
		return fmt.Errorf("idempotency: writing %s: %w", c.key, err)
	}
	return nil
}

// release gives the key up after a failure, so a retry can do the request.
// Revision-checked: a claim taken over meanwhile is not someone else's to
// delete.
func (c *claim) release(ctx context.Context) error {
	if err := c.store.kv.Delete(ctx, c.key, jetstream.LastRevision(c.revision)); err != nil {
		return fmt.Errorf("idempotency: releasing %s: %w", c.key, err)
	}
	return nil
}

func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}
