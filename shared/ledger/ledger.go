// Package ledger is the delivery ledger: the outcome of every dedupe key,
// kept in the JetStream key-value bucket "deliveries". A key recorded as
// delivered is never sent again, whatever copy of its message arrives later —
// a redelivery, a republished event outside the duplicate window, a redrive.
//
// Writes are optimistic: an entry remembers the revision it was read at, and
// writing it back fails with ErrConflict if someone else wrote in between, so
// two writers can never silently overwrite each other's outcome.
//
// The ledger remembers a key for as long as its bucket keeps an entry after
// its last write: 90 days unless ledger.retention says otherwise, longer than
// any copy of a message can come back (docs/deploying.md, "Streams").
//
// Put also keeps an index of the failed-but-retryable entries in a second
// bucket, "delivery_retries", so the resend sweep reads those and not the
// whole ledger.
package ledger

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/report"
)

// Bucket is the key-value bucket declared in streams/KV_deliveries.
const Bucket = "deliveries"

// RetryBucket is the index of retryable entries, declared in
// streams/KV_delivery_retries: the same keys as Bucket, each naming an entry
// that is (or, for a moment, is about to be) failed-but-retryable.
const RetryBucket = "delivery_retries"

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
	// Suppressed: not sent, its recipient's address being suppressed for
	// the tenant (package suppression), the Reason saying why. Not a
	// failure: no try was spent and nothing was dead-lettered.
	Suppressed State = "suppressed"
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
	// Note is what the channel says about the message tried, such as an
	// SMS's encoding and segments ("ucs-2, 2 segments").
	Note string `json:"note,omitempty"`
}

// Entry is the ledger's record of one dedupe key.
type Entry struct {
	DedupeKey         string `json:"dedupe_key"`
	NotificationID    string `json:"notification_id"`
	Tenant            string `json:"tenant"`
	Channel           string `json:"channel"`
	State             State  `json:"state"`
	Provider          string `json:"provider,omitempty"`
	ProviderMessageID string `json:"provider_message_id,omitempty"`
	Reason            string `json:"reason,omitempty"`
	Retryable         bool   `json:"retryable,omitempty"`
	// FallbackTo is the notification that took over on the fallback's next
	// channel when this one failed; FallbackOf, the one this replaced.
	FallbackTo string `json:"fallback_to,omitempty"`
	FallbackOf string `json:"fallback_of,omitempty"`
	// RedeliveryOf is the webhook this one sent again on demand.
	RedeliveryOf string    `json:"redelivery_of,omitempty"`
	Tries        int       `json:"tries"`
	Attempts     []Attempt `json:"attempts,omitempty"`
	// Order, Document and Recipient say what the notification is, as its
	// notification.Accepted record does: the order's id (none for a job),
	// the document type ("job" for a job without one) and the address.
	// They let the listing (package history) show a notification whose
	// Accepted record it never received, from its entry alone.
	Order     string `json:"order,omitempty"`
	Document  string `json:"document,omitempty"`
	Recipient string `json:"recipient,omitempty"`
	// Unsubscribable is the category its recipient may unsubscribe from
	// (notification.Delivery.Unsubscribable): where a provider's report
	// that the recipient unsubscribed applies.
	Unsubscribable string `json:"unsubscribable,omitempty"`
	// Delivery is the delivery message itself, kept while a notification
	// is failed-but-retryable, so the resend sweep can send it again — and
	// always for a webhook, which its tenant may have sent again on demand.
	Delivery json.RawMessage `json:"delivery,omitempty"`
	// Counted is the month (yyyy-mm, UTC) the notification was counted in
	// against its tenant's monthly quota (package quota): it is counted
	// once, by the first worker that claims it. Empty until then, and for
	// one refused over quota, so a redrive counts it again.
	Counted string `json:"counted,omitempty"`
	// Template and EventID are the notification's template and the event
	// it came from, which the outcome a reader takes from the entry tells
	// (notification.OutcomeOf).
	Template string `json:"template,omitempty"`
	EventID  string `json:"event_id,omitempty"`
	// Resends counts the sweep's resends of this notification.
	Resends int `json:"resends,omitempty"`
	// Reports are what the provider told of the message after accepting
	// it — delivered, bounced, opened… — newest last, the latest
	// MaxReports; each is kept once, however often it was told.
	Reports   []report.Report `json:"reports,omitempty"`
	UpdatedAt time.Time       `json:"updated_at"`
	// SettledAt is when the entry took its state, if that is an outcome
	// (Settled): the write at SettledAt is the outcome's, told to whoever
	// reads the ledger as a stream; later writes in the same state (a
	// provider's report kept, a resend counted) are not outcomes.
	SettledAt time.Time `json:"settled_at,omitzero"`

	revision uint64
	// key is where the entry was read: a redacted entry's DedupeKey no
	// longer digests to it (Redact).
	key string
	// stored is the state the ledger holds for the entry, as last read or
	// written.
	stored State
	// indexed: the entry was read (or written) failed-but-retryable, so
	// the retry index holds its key — at indexRevision, when known.
	indexed       bool
	indexRevision uint64
}

// Settled says whether s is an outcome: delivered, failed or suppressed.
func (s State) Settled() bool { return s == Delivered || s == Failed || s == Suppressed }

// Outcome says whether this write of the entry is the one that settled
// it: what a reader of the ledger's changes tells as an outcome.
func (e *Entry) Outcome() bool { return e.State.Settled() && e.SettledAt.Equal(e.UpdatedAt) }

// retryable is what the sweep resends, and what the retry index names.
func (e *Entry) retryable() bool { return e.State == Failed && e.Retryable }

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

// MaxReports is how many provider reports an entry keeps, newest last.
const MaxReports = 20

// Report keeps a provider's report, unless the entry has it already (the
// provider told it again).
func (e *Entry) Report(r report.Report) {
	if e.HasReport(r.Provider, r.EventID) {
		return
	}
	e.Reports = append(e.Reports, r)
	if over := len(e.Reports) - MaxReports; over > 0 {
		e.Reports = e.Reports[over:]
	}
}

// HasReport says whether the entry keeps the provider's event already.
func (e *Entry) HasReport(provider, eventID string) bool {
	return slices.ContainsFunc(e.Reports, func(r report.Report) bool { return r.Provider == provider && r.EventID == eventID })
}

// ErrConflict means the entry changed since it was read.
var ErrConflict = errors.New("ledger: entry changed since it was read")

// Ledger reads and writes entries.
type Ledger struct {
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	retries jetstream.KeyValue
	// settle is how old an index key must be before EachRetryable drops it
	// for naming an entry that is not retryable: Put writes the key just
	// before the entry, and a sweep reading in between must not undo it.
	settle time.Duration
}

// Open binds to the buckets, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Ledger, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("ledger: bucket %s: %w", Bucket, err)
	}
	retries, err := js.KeyValue(ctx, RetryBucket)
	if err != nil {
		return nil, fmt.Errorf("ledger: bucket %s: %w", RetryBucket, err)
	}
	return &Ledger{js: js, kv: kv, retries: retries, settle: time.Minute}, nil
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
	e, err := l.get(ctx, Key(tenant, dedupeKey))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{DedupeKey: dedupeKey, Tenant: tenant}, nil
	}
	return e, err
}

func (l *Ledger) get(ctx context.Context, key string) (Entry, error) {
	kve, err := l.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Entry{}, err
	}
	if err != nil {
		return Entry{}, fmt.Errorf("ledger: %w", err)
	}
	var e Entry
	if err := json.Unmarshal(kve.Value(), &e); err != nil {
		return Entry{}, fmt.Errorf("ledger: entry %s: %w", kve.Key(), err)
	}
	e.revision, e.indexed, e.stored, e.key = kve.Revision(), e.retryable(), e.State, kve.Key()
	return e, nil
}

// Put writes e if nobody wrote it since it was read (or, for a new entry,
// if nobody created it meanwhile); else ErrConflict. An entry becoming
// failed-but-retryable enters the retry index before it is written; one
// leaving that state leaves the index after. A crash between the two
// writes thus leaves the index naming an entry too many — which the sweep
// checks and drops — and never one too few.
func (l *Ledger) Put(ctx context.Context, e *Entry) error {
	e.UpdatedAt = time.Now().UTC()
	if e.State.Settled() && (e.State != e.stored || e.revision == 0) {
		e.SettledAt = e.UpdatedAt
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := cmp.Or(e.key, Key(e.Tenant, e.DedupeKey))
	retryable := e.retryable()
	if retryable && !e.indexed {
		rev, err := l.retries.Put(ctx, key, []byte(e.NotificationID))
		if err != nil {
			return fmt.Errorf("ledger: indexing %s as retryable: %w", key, err)
		}
		e.indexRevision = rev
	}
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
	if !retryable && e.indexed {
		// The outcome is written; an index key left behind by a failed
		// delete only costs the sweep a look, and it drops the key then.
		// Revision-checked when the index was read, so as not to drop a key
		// written again since.
		_ = l.retries.Delete(ctx, key, jetstream.LastRevision(e.indexRevision))
		e.indexRevision = 0
	}
	e.revision, e.indexed, e.stored, e.key = rev, retryable, e.State, key
	return nil
}

// EachRetryable calls fn with every failed-but-retryable entry, until fn
// returns false. It reads the retry index, not the ledger, and reads each
// entry the index names again before fn sees it: an index key naming an
// entry delivered (or failed for good) meanwhile is dropped, never passed on.
// An entry that cannot be read is skipped, and its error returned at the end.
func (l *Ledger) EachRetryable(ctx context.Context, fn func(Entry) bool) error {
	if err := l.complete(ctx); err != nil {
		return err
	}
	w, err := l.retries.WatchAll(ctx, jetstream.IgnoreDeletes(), jetstream.MetaOnly())
	if err != nil {
		return fmt.Errorf("ledger: reading %s: %w", RetryBucket, err)
	}
	defer func() { _ = w.Stop() }()
	var unread []error
	for {
		select {
		case <-ctx.Done():
			return errors.Join(append(unread, ctx.Err())...)
		case idx := <-w.Updates():
			if idx == nil { // every key present when the watch began was seen
				return errors.Join(unread...)
			}
			if idx.Key() == indexComplete {
				continue
			}
			e, err := l.get(ctx, idx.Key())
			if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				unread = append(unread, err)
				continue
			}
			if err != nil || !e.retryable() {
				l.dropStale(ctx, idx)
				continue
			}
			e.indexRevision = idx.Revision()
			if !fn(e) {
				return errors.Join(unread...)
			}
		}
	}
}

// indexComplete is the retry index's mark that it names every retryable
// entry. Ledger keys always hold a dot; this one has none.
const indexComplete = "complete"

// complete indexes, when the mark is missing, every entry the ledger holds
// as failed-but-retryable, then sets the mark. That is once after an
// upgrade from a Herald without the index, and then whenever the mark
// expires with the bucket's retention — a full scan per retention period,
// which also restores any key a lost write kept out of the index.
func (l *Ledger) complete(ctx context.Context) error {
	_, err := l.retries.Get(ctx, indexComplete)
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	keys, err := l.kv.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("ledger: listing %s to complete %s: %w", Bucket, RetryBucket, err)
	}
	defer func() { _ = keys.Stop() }()
	for key := range keys.Keys() {
		if e, err := l.get(ctx, key); err == nil && e.retryable() {
			if _, err := l.retries.Put(ctx, key, []byte(e.NotificationID)); err != nil {
				return fmt.Errorf("ledger: indexing %s as retryable: %w", key, err)
			}
		}
	}
	if _, err := l.retries.Put(ctx, indexComplete, nil); err != nil {
		return fmt.Errorf("ledger: marking %s complete: %w", RetryBucket, err)
	}
	return nil
}

// dropStale removes an index key whose entry is not retryable (or expired),
// unless it is fresh — its entry may be about to be written — or was
// written again since it was read.
func (l *Ledger) dropStale(ctx context.Context, idx jetstream.KeyValueEntry) {
	if time.Since(idx.Created()) < l.settle {
		return
	}
	_ = l.retries.Delete(ctx, idx.Key(), jetstream.LastRevision(idx.Revision()))
}

// Retire takes an entry EachRetryable passed out of the retry index: the
// sweep is done with it (it resent it as often as it may). The entry stays
// failed. The delete is revision-checked, so a newer failure of the same
// notification — a redrive that failed again — stays indexed.
func (l *Ledger) Retire(ctx context.Context, e Entry) error {
	if e.indexRevision == 0 {
		return fmt.Errorf("ledger: retiring %s: the entry was not read from %s", e.NotificationID, RetryBucket)
	}
	err := l.retries.Delete(ctx, Key(e.Tenant, e.DedupeKey), jetstream.LastRevision(e.indexRevision))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ledger: retiring %s from %s: %w", e.NotificationID, RetryBucket, err)
	}
	return nil
}
