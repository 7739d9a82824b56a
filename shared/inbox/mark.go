package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/recipient"
)

// Action is a change of an item's state.
type Action string

const (
	Seen       Action = "seen"
	MarkRead   Action = "read"
	MarkUnread Action = "unread"
	Archive    Action = "archive"
	Unarchive  Action = "unarchive"
)

// ErrBadAction is returned for an action that is none of the above.
var ErrBadAction = errors.New("inbox: the action is one of seen, read, unread, archive, unarchive")

// Mark applies a to the subscriber's item id and returns the item. An item
// already in that state is returned unchanged, with no write.
func (s *Store) Mark(ctx context.Context, tenant, sub, id string, a Action) (Item, error) {
	var e entry
	_, err := s.update(ctx, tenant, sub, func(x *index) error {
		i := x.find(id)
		if i < 0 {
			return ErrNotFound
		}
		changed, err := x.apply(i, a, s.now())
		e = x.Items[i]
		if err != nil || !changed {
			return cmpErr(err, errUnchanged)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return Item{}, err
	}
	items, err := s.contents(ctx, tenant, sub, []entry{e})
	if err != nil {
		return Item{}, err
	}
	return items[0], nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// apply changes item i's state and notes the change; false when it was
// already so.
func (x *index) apply(i int, a Action, now time.Time) (bool, error) {
	e, id := &x.Items[i], x.Items[i].ID
	set := func(t *int64, note *[]string) bool {
		if *t != 0 {
			return false
		}
		*t = now.UnixNano()
		*note = append(*note, id)
		return true
	}
	switch a {
	case Seen:
		return set(&e.Seen, &x.Change.Seen), nil
	case MarkRead:
		set(&e.Seen, &x.Change.Seen) // read implies seen
		return set(&e.Read, &x.Change.Read), nil
	case MarkUnread:
		return unset(&e.Read, &x.Change.Unread, id), nil
	case Archive:
		return set(&e.Archived, &x.Change.Archived), nil
	case Unarchive:
		return unset(&e.Archived, &x.Change.Unarchived, id), nil
	}
	return false, ErrBadAction
}

func unset(t *int64, note *[]string, id string) bool {
	if *t == 0 {
		return false
	}
	*t = 0
	*note = append(*note, id)
	return true
}

// ReadAll marks every item not archived read (and seen), in one write,
// and returns how many changed.
func (s *Store) ReadAll(ctx context.Context, tenant, sub string) (int, error) {
	n := 0
	_, err := s.update(ctx, tenant, sub, func(x *index) error {
		n = 0
		now := s.now()
		for i := range x.Items {
			if x.Items[i].Archived != 0 || x.Items[i].Read != 0 {
				continue
			}
			changed, _ := x.apply(i, MarkRead, now)
			if changed {
				n++
			}
		}
		if n == 0 {
			return errUnchanged
		}
		x.Change.ReadAll = true
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return 0, err
	}
	return n, nil
}

// Item is the subscriber's item id, with its state.
func (s *Store) Item(ctx context.Context, tenant, sub, id string) (Item, error) {
	x, _, err := s.load(ctx, tenant, sub)
	if err != nil {
		return Item{}, err
	}
	i := x.find(id)
	if i < 0 {
		return Item{}, ErrNotFound
	}
	items, err := s.contents(ctx, tenant, sub, x.Items[i:i+1])
	if err != nil {
		return Item{}, err
	}
	return items[0], nil
}

// Erase removes the subscriber's feed, index and contents, from the stream
// itself: nothing of it is left, not even a delete marker.
func (s *Store) Erase(ctx context.Context, tenant, sub string) error {
	str, err := s.js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("inbox: erasing a feed: %w", err)
	}
	subject := "$KV." + Bucket + "." + indexKey(tenant, sub)
	for _, subj := range []string{subject + ".>", subject} {
		if err := str.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			return fmt.Errorf("inbox: erasing a feed: %w", err)
		}
	}
	return nil
}

// Sweep applies the tenant's limits to every feed of the tenant, written
// to or not, and returns how many items it dropped. A background caller
// runs it; each feed costs one read, and a write only when something goes.
func (s *Store) Sweep(ctx context.Context, tenant string, l Limits) (int, error) {
	keys, err := s.kv.ListKeysFiltered(ctx, tenant+".*")
	if err != nil {
		return 0, fmt.Errorf("inbox: listing the feeds of %s: %w", tenant, err)
	}
	dropped := 0
	for key := range keys.Keys() {
		n, err := s.sweepOne(ctx, tenant, key[len(tenant)+1:], l.WithDefaults())
		if err != nil {
			_ = keys.Stop()
			return dropped, err
		}
		dropped += n
	}
	return dropped, nil
}

func (s *Store) sweepOne(ctx context.Context, tenant, token string, l Limits) (int, error) {
	sub, err := recipient.FromToken(token)
	if err != nil {
		return 0, nil // not a feed's key
	}
	x, err := s.update(ctx, tenant, sub, func(x *index) error {
		x.Change.Dropped = x.limit(l, s.now())
		if len(x.Change.Dropped) == 0 {
			return errUnchanged
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s.dropContents(ctx, tenant, sub, x.Change.Dropped)
	return len(x.Change.Dropped), nil
}
