package inbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Limits bound a subscriber's feed: a tenant's retention and the cap per
// subscriber.
type Limits struct {
	// Retention is how long an item is kept after it was created. Defaults
	// to DefaultRetention.
	Retention time.Duration
	// Cap is the most items one subscriber's feed holds; past it the
	// oldest archived items go first, then the oldest. Defaults to
	// DefaultCap; at most MaxCap, so that the index stays one KV entry.
	Cap int
}

const (
	DefaultRetention = 90 * 24 * time.Hour
	DefaultCap       = 1000
	MaxCap           = 4000
)

// WithDefaults fills what l leaves unset (or sets below one), and bounds
// the cap: a slip in a tenant's settings never empties its feeds.
func (l Limits) WithDefaults() Limits {
	if l.Retention <= 0 {
		l.Retention = DefaultRetention
	}
	if l.Cap <= 0 {
		l.Cap = DefaultCap
	}
	l.Cap = min(l.Cap, MaxCap)
	return l
}

// Add writes it to the subscriber's feed: its contents first, then the
// index that lists it. It is idempotent by it.ID: an item already in the
// feed is left as it is and returned with new false. The same write drops
// what l no longer allows.
func (s *Store) Add(ctx context.Context, tenant, sub string, it Item, l Limits) (Item, bool, error) {
	if it.ID == "" {
		return it, false, errors.New("inbox: an item needs an id")
	}
	if it.CreatedAt.IsZero() {
		it.CreatedAt = s.now()
	}
	it.State = State{}
	rev, err := s.putContents(ctx, tenant, sub, it)
	if err != nil {
		return it, false, err
	}
	var existing *entry
	x, err := s.update(ctx, tenant, sub, func(x *index) error {
		if i := x.find(it.ID); i >= 0 {
			existing = &x.Items[i]
			return errUnchanged
		}
		x.insert(entry{ID: it.ID, Created: it.CreatedAt.UnixNano(), Rev: rev})
		x.Change.Added = it.ID
		x.Change.Dropped = x.limit(l.WithDefaults(), s.now())
		return nil
	})
	if errors.Is(err, errUnchanged) {
		it.CreatedAt, it.State = existing.createdAt(), existing.state()
		return it, false, nil
	}
	if err != nil {
		return it, false, err
	}
	s.dropContents(ctx, tenant, sub, x.Change.Dropped)
	return it, true, nil
}

// putContents writes the item's contents once and returns their revision;
// contents already there (an earlier attempt of the same delivery) are
// kept.
func (s *Store) putContents(ctx context.Context, tenant, sub string, it Item) (uint64, error) {
	b, err := json.Marshal(it)
	if err != nil {
		return 0, fmt.Errorf("inbox: %w", err)
	}
	key := itemKey(tenant, sub, it.ID)
	rev, err := s.kv.Create(ctx, key, b)
	if errors.Is(err, jetstream.ErrKeyExists) {
		kve, gerr := s.kv.Get(ctx, key)
		if gerr != nil {
			return 0, fmt.Errorf("inbox: reading an item written before: %w", gerr)
		}
		return kve.Revision(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("inbox: writing an item: %w", err)
	}
	return rev, nil
}

// insert puts e where newest-first order wants it: by created time, then
// by id, so that the order is total and a cursor names one place.
func (x *index) insert(e entry) {
	i, _ := slices.BinarySearchFunc(x.Items, e, newerFirst)
	x.Items = slices.Insert(x.Items, i, e)
}

func newerFirst(a, b entry) int {
	if c := cmp.Compare(b.Created, a.Created); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// limit drops the items older than the retention, then, past the cap, the
// oldest archived items and then the oldest; it returns their ids.
func (x *index) limit(l Limits, now time.Time) []string {
	var dropped []string
	cutoff := now.Add(-l.Retention).UnixNano()
	x.Items = slices.DeleteFunc(x.Items, func(e entry) bool {
		if e.Created < cutoff {
			dropped = append(dropped, e.ID)
			return true
		}
		return false
	})
	for _, archived := range []bool{true, false} {
		for i := len(x.Items) - 1; i >= 0 && len(x.Items) > l.Cap; i-- {
			if !archived || x.Items[i].Archived != 0 {
				dropped = append(dropped, x.Items[i].ID)
				x.Items = slices.Delete(x.Items, i, i+1)
			}
		}
	}
	return dropped
}

// dropContents removes the contents of items the index no longer lists.
// It purges their subjects from the stream rather than deleting the keys,
// which would leave a marker per item forever. A failure leaves contents
// nobody can reach (the index is the truth); the next Erase removes them.
func (s *Store) dropContents(ctx context.Context, tenant, sub string, ids []string) {
	if len(ids) == 0 {
		return
	}
	str, err := s.js.Stream(ctx, stream)
	if err != nil {
		return
	}
	for _, id := range ids {
		_ = str.Purge(ctx, jetstream.WithPurgeSubject("$KV."+Bucket+"."+itemKey(tenant, sub, id)))
	}
}
