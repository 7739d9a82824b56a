package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/recipient"
)

// Bucket is the KV bucket the feeds are kept in (stream KV_inbox).
const (
	Bucket = "inbox"
	stream = "KV_" + Bucket
)

// ErrNotFound is returned for an item the subscriber's feed does not hold,
// whatever the reason: another subscriber's, another tenant's, dropped, or
// never written. It says nothing about anyone else's feed.
var ErrNotFound = errors.New("inbox: no such item")

// maxAttempts bounds the compare-and-set retries of one index write: past
// it, writers to one feed are contending beyond reason.
const maxAttempts = 16

// Store reads and writes the subscribers' feeds.
type Store struct {
	js jetstream.JetStream
	kv jetstream.KeyValue
	// now is the clock retention is measured with; tests move it.
	now func() time.Time
}

// Open binds to the inbox bucket, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("inbox: bucket %s: %w", Bucket, err)
	}
	return &Store{js: js, kv: kv, now: time.Now}, nil
}

// index is a subscriber's feed without the contents: one KV entry, so the
// counts are one read and a state change one write. It is stored as
// codec.go lays out, the counts first so that Counts decodes them alone.
type index struct {
	Counts Counts
	Items  []entry // newest first
	Change change
}

// entry is one item in the index. Its times are Unix nanoseconds, zero
// for unset.
type entry struct {
	ID      string
	Created int64
	// Rev is the revision of the item's contents: what a browser that
	// last saw a later sequence has already been sent.
	Rev                  uint64
	Seen, Read, Archived int64
}

func (e entry) createdAt() time.Time { return time.Unix(0, e.Created).UTC() }

func (e entry) state() State {
	return State{SeenAt: timeOf(e.Seen), ReadAt: timeOf(e.Read), ArchivedAt: timeOf(e.Archived)}
}

func timeOf(nanos int64) *time.Time {
	if nanos == 0 {
		return nil
	}
	t := time.Unix(0, nanos).UTC()
	return &t
}

// change is what an index write did, for the change log's readers.
type change struct {
	Added      string   `json:"added,omitempty"`
	Seen       []string `json:"seen,omitempty"`
	Read       []string `json:"read,omitempty"`
	Unread     []string `json:"unread,omitempty"`
	Archived   []string `json:"archived,omitempty"`
	Unarchived []string `json:"unarchived,omitempty"`
	ReadAll    bool     `json:"read_all,omitempty"`
	Dropped    []string `json:"dropped,omitempty"`
}

func indexKey(tenant, sub string) string { return tenant + "." + recipient.Token(sub) }

func itemKey(tenant, sub, id string) string {
	return indexKey(tenant, sub) + "." + recipient.Token(id)
}

// find is where id is in the index, or -1.
func (x *index) find(id string) int {
	return slices.IndexFunc(x.Items, func(e entry) bool { return e.ID == id })
}

// recount sets the counts from the items.
func (x *index) recount() {
	x.Counts = Counts{}
	for _, e := range x.Items {
		if e.Archived != 0 {
			continue
		}
		x.Counts.Total++
		if e.Seen == 0 {
			x.Counts.Unseen++
		}
		if e.Read == 0 {
			x.Counts.Unread++
		}
	}
}

// load reads a subscriber's index and its revision; a subscriber with no
// feed has an empty one at revision 0.
func (s *Store) load(ctx context.Context, tenant, sub string) (index, uint64, error) {
	var x index
	kve, err := s.kv.Get(ctx, indexKey(tenant, sub))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return x, 0, nil
	}
	if err != nil {
		return x, 0, fmt.Errorf("inbox: reading a feed's index: %w", err)
	}
	x, err = decodeIndex(kve.Value())
	return x, kve.Revision(), err
}

// errUnchanged tells update that the change needs no write.
var errUnchanged = errors.New("inbox: unchanged")

// update applies fn to the subscriber's index and writes it by
// compare-and-set, reading again and retrying when another writer got
// there first. fn returning errUnchanged ends it without a write.
func (s *Store) update(ctx context.Context, tenant, sub string, fn func(*index) error) (index, error) {
	for range maxAttempts {
		x, rev, err := s.load(ctx, tenant, sub)
		if err != nil {
			return x, err
		}
		x.Change = change{}
		if err := fn(&x); err != nil {
			return x, err
		}
		x.recount()
		err = s.write(ctx, tenant, sub, x, rev)
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongSequence(err) {
			continue
		}
		return x, err
	}
	return index{}, fmt.Errorf("inbox: a feed's index changed under %d writes in a row; try again", maxAttempts)
}

func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

func (s *Store) write(ctx context.Context, tenant, sub string, x index, rev uint64) error {
	b, err := x.encode()
	if err != nil {
		return err
	}
	key := indexKey(tenant, sub)
	if rev == 0 {
		_, err = s.kv.Create(ctx, key, b)
	} else {
		_, err = s.kv.Update(ctx, key, b, rev)
	}
	if err != nil {
		return fmt.Errorf("inbox: writing a feed's index: %w", err)
	}
	return nil
}

// Counts are the subscriber's counts: one read of the index, of which only
// the counts are decoded. A subscriber with no feed has zeros.
func (s *Store) Counts(ctx context.Context, tenant, sub string) (Counts, error) {
	var c Counts
	kve, err := s.kv.Get(ctx, indexKey(tenant, sub))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("inbox: reading a feed's counts: %w", err)
	}
	return decodeCounts(kve.Value())
}
