package inbox

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/recipient"
)

// Kind is what a change carries.
type Kind string

const (
	// KindItem is a new item, with its contents.
	KindItem Kind = "item"
	// KindState is a write of the index: the states it changed, the ids it
	// dropped and the counts after it.
	KindState Kind = "state"
	// KindSync is the whole state of a feed, for a browser that missed
	// changes: every item's state and the counts.
	KindSync Kind = "sync"
)

// ItemState is one item's state in a change.
type ItemState struct {
	ID string `json:"id"`
	State
}

// Change is one message of the feed's change log. Seq is its stream
// sequence: a browser that last saw Seq resumes after it with Since.
type Change struct {
	Seq        uint64
	Tenant     string
	Subscriber string
	Kind       Kind
	Item       *Item
	States     []ItemState
	Dropped    []string
	ReadAll    bool
	Counts     Counts
}

// Want says whether a follower wants a feed's changes; it is asked before
// a message is decoded, so a replica skips the feeds nobody it serves is
// watching for the price of parsing a subject.
type Want func(tenant, sub string) bool

// Follow calls fn with every change written from now on to a feed want
// accepts, in order, until stop is called or ctx ends. A new item is told
// when the index that lists it is written — its contents are written
// first and held until then — so a browser never hears of an item the
// feed does not hold, and hears of it with the counts that include it.
func Follow(ctx context.Context, js jetstream.JetStream, want Want, fn func(Change)) (stop func(), err error) {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"$KV." + Bucket + ".>"},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("inbox: following the feeds: %w", err)
	}
	f := &follower{want: want, held: map[string]*Item{}}
	cc, err := cons.Consume(func(msg jetstream.Msg) { // called in order, one at a time
		if c, ok := f.decode(msg); ok {
			fn(c)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("inbox: following the feeds: %w", err)
	}
	return cc.Stop, nil
}

// maxHeld bounds the contents a follower holds for an index write that
// has not come: one whose index write failed is let go of, oldest first.
const maxHeld = 4096

// follower turns the bucket's messages into changes.
type follower struct {
	want  Want
	held  map[string]*Item // tenant, subscriber and item id → contents written, not yet listed
	order []string
}

// decode is msg as a change, if the follower's want wants its feed and it
// is one to tell.
func (f *follower) decode(msg jetstream.Msg) (Change, bool) {
	tenant, sub, item, ok := parseSubject(msg.Subject())
	if !ok || !f.want(tenant, sub) || len(msg.Data()) == 0 {
		return Change{}, false
	}
	meta, err := msg.Metadata()
	if err != nil {
		return Change{}, false
	}
	c := Change{Seq: meta.Sequence.Stream, Tenant: tenant, Subscriber: sub}
	if item {
		f.hold(tenant, sub, msg.Data())
		return Change{}, false
	}
	added, ok := c.decodeIndex(msg.Data())
	if ok && added != "" {
		key := tenant + "\x00" + sub + "\x00" + added
		if it := f.held[key]; it != nil {
			delete(f.held, key)
			c.Kind, c.Item = KindItem, it
		}
	}
	return c, ok
}

// hold keeps an item's contents until the index that lists it is written.
func (f *follower) hold(tenant, sub string, b []byte) {
	var it Item
	if json.Unmarshal(b, &it) != nil {
		return
	}
	key := tenant + "\x00" + sub + "\x00" + it.ID
	f.held[key] = &it
	f.order = append(f.order, key)
	if len(f.order) > maxHeld {
		delete(f.held, f.order[0])
		f.order = f.order[1:]
	}
}

// parseSubject splits $KV.inbox.<tenant>.<sub token>[.<item token>].
func parseSubject(subject string) (tenant, sub string, item, ok bool) {
	parts := strings.Split(strings.TrimPrefix(subject, "$KV."+Bucket+"."), ".")
	if len(parts) != 2 && len(parts) != 3 {
		return "", "", false, false
	}
	sub, err := recipient.FromToken(parts[1])
	return parts[0], sub, len(parts) == 3, err == nil
}

// decodeIndex reads an index write as a state change, and says which
// item it added, if any.
func (c *Change) decodeIndex(b []byte) (added string, ok bool) {
	x, err := decodeIndex(b)
	if err != nil {
		return "", false
	}
	c.Kind, c.Counts, c.ReadAll, c.Dropped = KindState, x.Counts, x.Change.ReadAll, x.Change.Dropped
	ch := x.Change
	changed := slices.Concat(ch.Seen, ch.Read, ch.Unread, ch.Archived, ch.Unarchived)
	for _, e := range x.Items {
		if slices.Contains(changed, e.ID) {
			c.States = append(c.States, ItemState{ID: e.ID, State: e.state()})
		}
	}
	return ch.Added, true
}

// Since is what a browser that last saw sequence seq of the subscriber's
// feed missed: every item written after seq that the feed still holds,
// oldest first, then, if the index changed after seq, one sync change
// with every item's state and the counts. The bucket keeps one version of
// each key, so the latest state stands for every change in between.
func (s *Store) Since(ctx context.Context, tenant, sub string, seq uint64) ([]Change, error) {
	x, rev, err := s.load(ctx, tenant, sub)
	if err != nil || rev <= seq {
		return nil, err
	}
	var newer []entry
	for _, e := range x.Items {
		if e.Rev > seq {
			newer = append(newer, e)
		}
	}
	slices.SortFunc(newer, func(a, b entry) int { return cmp.Compare(a.Rev, b.Rev) })
	items, err := s.contents(ctx, tenant, sub, newer)
	if err != nil {
		return nil, err
	}
	var out []Change
	for i := range items {
		out = append(out, Change{Seq: newer[i].Rev, Tenant: tenant, Subscriber: sub, Kind: KindItem, Item: &items[i]})
	}
	return append(out, x.sync(tenant, sub, rev)), nil
}

func (x *index) sync(tenant, sub string, rev uint64) Change {
	c := Change{Seq: rev, Tenant: tenant, Subscriber: sub, Kind: KindSync, Counts: x.Counts}
	for _, e := range x.Items {
		c.States = append(c.States, ItemState{ID: e.ID, State: e.state()})
	}
	return c
}
