// Package ledger is the delivery ledger: the outcome of every dedupe key,
// kept in the JetStream key-value bucket "deliveries". A key recorded as
// delivered is never sent again, whatever copy of its message arrives later —
// a redelivery, a republished event outside the duplicate window, a redrive.
//
// Writes are optimistic: an entry remembers the revision it was read at, and
// writing it back fails with ErrConflict if someone else wrote in between, so
// two writers can never silently overwrite each other's outcome.
package ledger

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

// Bucket is the key-value bucket declared in streams/KV_deliveries.
const Bucket = "deliveries"

// State is where a notification stands.
type State string

const (
	// Sending: a worker claimed the notification and is sending it now.
	// A claim younger than the lease TTL means hands off, even if the
	// Redis lease was lost (a Redis restart).
	Sending State = "sending"
	// Retrying: tries failed transiently; more will come.
	Retrying State = "retrying"
	// Delivered: a provider accepted it. Final.
	Delivered State = "delivered"
	// Failed: given up, with the reason; Retryable says whether a resend
	// could succeed (tries exhausted) or not (a permanent refusal).
	Failed State = "failed"
)

// MaxAttempts is how many attempts an entry keeps, newest last.
const MaxAttempts = 20

// Attempt is one try: one pass over the provider chain.
type Attempt struct {
	Time      time.Time `json:"time"`
	Delivery  uint64    `json:"delivery"` // JetStream's delivery count for the message
	Provider  string    `json:"provider,omitempty"`
	Error     string    `json:"error,omitempty"`
	Ambiguous bool      `json:"ambiguous,omitempty"`
}

// Entry is the ledger's record of one dedupe key.
type Entry struct {
	DedupeKey         string    `json:"dedupe_key"`
	NotificationID    string    `json:"notification_id"`
	Tenant            string    `json:"tenant"`
	Channel           string    `json:"channel"`
	State             State     `json:"state"`
	Provider          string    `json:"provider,omitempty"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	Reason            string    `json:"reason,omitempty"`
	Retryable         bool      `json:"retryable,omitempty"`
	Tries             int       `json:"tries"`
	Attempts          []Attempt `json:"attempts,omitempty"`
	// Delivery is the delivery message itself, kept while a notification
	// is failed-but-retryable, so the resend sweep can send it again.
	Delivery json.RawMessage `json:"delivery,omitempty"`
	// Resends counts the sweep's resends of this notification.
	Resends   int       `json:"resends,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`

	revision uint64
}

// Exists reports whether the entry was read from the ledger (or written to it).
func (e *Entry) Exists() bool { return e.revision > 0 }

// Record adds an attempt, keeping the newest MaxAttempts.
func (e *Entry) Record(a Attempt) {
	e.Tries++
	e.Attempts = append(e.Attempts, a)
	if over := len(e.Attempts) - MaxAttempts; over > 0 {
		e.Attempts = e.Attempts[over:]
	}
}

// ErrConflict means the entry changed since it was read.
var ErrConflict = errors.New("ledger: entry changed since it was read")

// Ledger reads and writes entries.
type Ledger struct {
	kv jetstream.KeyValue
}

// Open binds to the bucket, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Ledger, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("ledger: bucket %s: %w", Bucket, err)
	}
	return &Ledger{kv: kv}, nil
}

// Key is where a dedupe key is kept: the tenant, then a digest of the key
// (dedupe keys hold ':' and '@', which KV keys may not).
func Key(tenant, dedupeKey string) string {
	sum := sha256.Sum256([]byte(dedupeKey))
	return tenant + "." + hex.EncodeToString(sum[:])
}

// Get reads the entry for a dedupe key; a key never recorded comes back as
// an entry that does not Exist, ready to be filled and Put.
func (l *Ledger) Get(ctx context.Context, tenant, dedupeKey string) (Entry, error) {
	kve, err := l.kv.Get(ctx, Key(tenant, dedupeKey))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{DedupeKey: dedupeKey, Tenant: tenant}, nil
	}
	if err != nil {
		return Entry{}, fmt.Errorf("ledger: %w", err)
	}
	var e Entry
	if err := json.Unmarshal(kve.Value(), &e); err != nil {
		return Entry{}, fmt.Errorf("ledger: entry %s: %w", kve.Key(), err)
	}
	e.revision = kve.Revision()
	return e, nil
}

// Put writes e if nobody wrote it since it was read (or, for a new entry,
// if nobody created it meanwhile); else ErrConflict.
func (l *Ledger) Put(ctx context.Context, e *Entry) error {
	e.UpdatedAt = time.Now().UTC()
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := Key(e.Tenant, e.DedupeKey)
	var rev uint64
	if e.revision == 0 {
		rev, err = l.kv.Create(ctx, key, b)
	} else {
		rev, err = l.kv.Update(ctx, key, b, e.revision)
	}
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || (errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
		return ErrConflict
	}
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	e.revision = rev
	return nil
}

// EachRetryable calls fn with every failed-but-retryable entry, until fn
// returns false. It reads the whole bucket key by key: fine for a periodic
// sweep over thousands of notifications, not for a hot path.
func (l *Ledger) EachRetryable(ctx context.Context, fn func(Entry) bool) error {
	keys, err := l.kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer func() { _ = keys.Stop() }()
	for key := range keys.Keys() {
		kve, err := l.kv.Get(ctx, key)
		if err != nil {
			continue // deleted meanwhile
		}
		var e Entry
		if json.Unmarshal(kve.Value(), &e) != nil || e.State != Failed || !e.Retryable {
			continue
		}
		e.revision = kve.Revision()
		if !fn(e) {
			return nil
		}
	}
	return ctx.Err()
}
