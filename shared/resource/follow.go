package resource

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/kvmirror"
)

// Feed follows a kind's bucket for a copy a Cache cannot be: one kept by
// something other than the key (the members of each topic, by topic).
type Feed struct {
	follower *kvmirror.Follower
}

// Follow calls apply with every record of kind's bucket, then with every
// change, one at a time in the bucket's order: the record at key, or ok
// false when it was deleted (or does not decode and kind.Unreadable does
// not keep it). It returns once every record present when it began was
// applied (ctx bounds that wait, not the following). Stop ends it.
func Follow[T any](ctx context.Context, js jetstream.JetStream, kind Kind[T], apply func(key string, v T, ok bool)) (*Feed, error) {
	f, err := kvmirror.Follow(ctx, js, kind.Bucket, func(kve jetstream.KeyValueEntry) {
		var (
			v  T
			ok bool
		)
		if kve.Operation() == jetstream.KeyValuePut {
			v, ok = kind.read(kve)
		}
		apply(kve.Key(), v, ok)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind.Name, err)
	}
	return &Feed{follower: f}, nil
}

// Stop ends the following and waits for the last change to be applied.
func (f *Feed) Stop() { f.follower.Stop() }

// read decodes a watched entry: false leaves it out, unless the kind
// keeps what it cannot read (Unreadable).
func (k Kind[T]) read(kve jetstream.KeyValueEntry) (T, bool) {
	v, err := (&Store[T]{kind: k}).decode(kve)
	if err == nil {
		return v, true
	}
	if k.Unreadable == nil {
		return v, false
	}
	return k.Unreadable(kve.Key(), err)
}
