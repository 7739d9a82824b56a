package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/notification"
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
// already in that state is returned unchanged, with no write. Marking
// read an item a workflow's send wrote tells its run, each time (see
// tellRuns); if that fails, the item is read and the error says so.
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
	if a == MarkRead {
		// Marking read again tells again: a word lost the first time
		// reaches the run now.
		if err := s.tellRuns(ctx, tenant, items); err != nil {
			return items[0], err
		}
	}
	return items[0], nil
}

// tellRuns tells the workflow run of each read item a send of the run
// wrote (Item.Run) that it was read: a wait until_status: read ends on it.
// The message's Nats-Msg-Id names the notification and the state, so a
// word told twice is stored once. Its failure is the caller's: the item
// is read, and marking it read again tells again.
func (s *Store) tellRuns(ctx context.Context, tenant string, items []Item) error {
	for _, it := range items {
		// An item of no run (Run nil) tells nothing. Only read items come
		// here: ReadAt is set.
		d := notification.Delivery{ID: it.Notification, Tenant: tenant, Run: it.Run}
		if err := notification.PublishRunStatus(ctx, s.js, d, StatusRead, *it.ReadAt); err != nil {
			return fmt.Errorf("inbox: the item is read, but telling its workflow run failed (mark it read again): %w", err)
		}
	}
	return nil
}

// StatusRead is the state a read item's run is told of
// (notification.RunStatus.State): a wait until_status: read ends on it.
const StatusRead = "read"

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
// and returns how many changed; it tells the runs of those a workflow's
// send wrote.
func (s *Store) ReadAll(ctx context.Context, tenant, sub string) (int, error) {
	var read []entry
	_, err := s.update(ctx, tenant, sub, func(x *index) error {
		read = read[:0]
		now := s.now()
		for i := range x.Items {
			if x.Items[i].Archived != 0 || x.Items[i].Read != 0 {
				continue
			}
			if changed, _ := x.apply(i, MarkRead, now); changed {
				read = append(read, x.Items[i])
			}
		}
		if len(read) == 0 {
			return errUnchanged
		}
		x.Change.ReadAll = true
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return len(read), s.tellReadRuns(ctx, tenant, sub, read)
}

// tellReadRuns tells the runs of the items ReadAll read. Which items a run
// wrote only their contents say, so they are read, a batch at a time; the
// items read before are not told again (Mark tells again).
func (s *Store) tellReadRuns(ctx context.Context, tenant, sub string, read []entry) error {
	for batch := range slices.Chunk(read, MaxLimit) {
		items, err := s.contents(ctx, tenant, sub, batch)
		if err != nil {
			return fmt.Errorf("inbox: the items are read, but their workflow runs were not told: %w", err)
		}
		if err := s.tellRuns(ctx, tenant, items); err != nil {
			return err
		}
	}
	return nil
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
	swept, err := s.sweepKeys(ctx, tenant+".*", func(string) Limits { return l }, 0)
	return swept.Items, err
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
