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
// accepts, in order, until stop is called or ctx ends.
func Follow(ctx context.Context, js jetstream.JetStream, want Want, fn func(Change)) (stop func(), err error) {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"$KV." + Bucket + ".>"},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("inbox: following the feeds: %w", err)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if c, ok := decodeChange(msg, want); ok {
			fn(c)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("inbox: following the feeds: %w", err)
	}
	return cc.Stop, nil
}

// decodeChange is msg as a change, if want wants its feed and it is one.
func decodeChange(msg jetstream.Msg, want Want) (Change, bool) {
	tenant, sub, item, ok := parseSubject(msg.Subject())
	if !ok || !want(tenant, sub) || len(msg.Data()) == 0 {
		return Change{}, false
	}
	meta, err := msg.Metadata()
	if err != nil {
		return Change{}, false
	}
	c := Change{Seq: meta.Sequence.Stream, Tenant: tenant, Subscriber: sub}
	if item {
		return c, c.decodeItem(msg.Data())
	}
	return c, c.decodeIndex(msg.Data())
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

func (c *Change) decodeItem(b []byte) bool {
	var it Item
	if json.Unmarshal(b, &it) != nil {
		return false
	}
	c.Kind, c.Item = KindItem, &it
	return true
}

func (c *Change) decodeIndex(b []byte) bool {
	x, err := decodeIndex(b)
	if err != nil {
		return false
	}
	c.Kind, c.Counts, c.ReadAll, c.Dropped = KindState, x.Counts, x.Change.ReadAll, x.Change.Dropped
	ch := x.Change
	changed := slices.Concat(ch.Seen, ch.Read, ch.Unread, ch.Archived, ch.Unarchived)
	for _, e := range x.Items {
		if slices.Contains(changed, e.ID) {
			c.States = append(c.States, ItemState{ID: e.ID, State: e.state()})
		}
	}
	return true
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
