package resource

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// A record may be one of many under a key prefix longer than the
// tenant's — a topic's memberships, "<tenant>.<topic>.<subscriber>" — and
// those are listed, counted and removed by one filter on the prefix, never
// a read of every record the tenant has.

// KeysUnder are the keys under prefix ("<tenant>.<token>…", one or more
// whole tokens), in no order.
func (s *Store[T]) KeysUnder(ctx context.Context, prefix string) ([]string, error) {
	if err := checkKey(prefix); err != nil {
		return nil, err
	}
	return s.keysMatching(ctx, prefix+".>")
}

// ListUnder returns a page of the records under prefix in key order, as
// List does a tenant's, and the cursor (a key) of the next page.
func (s *Store[T]) ListUnder(ctx context.Context, prefix string, p Page) ([]T, string, error) {
	keys, err := s.KeysUnder(ctx, prefix)
	if err != nil {
		return nil, "", err
	}
	return s.page(ctx, keys, p)
}

// deleteWindow bounds the deletes in flight at once.
const deleteWindow = 256

// DeleteUnder removes every record under prefix, each with a delete
// marker that watchers see (a purge of the stream would leave their
// caches holding the records), and says how many it removed. The deletes
// are sent deleteWindow at a time without waiting for each: a topic of
// 100,000 is not 100,000 round trips. Stopped part way (an error, ctx
// done), what is left stays under the prefix, and a second call removes
// it.
func (s *Store[T]) DeleteUnder(ctx context.Context, prefix string) (int, error) {
	keys, err := s.KeysUnder(ctx, prefix)
	if err != nil {
		return 0, err
	}
	for start := 0; start < len(keys); start += deleteWindow {
		if err := s.deleteAll(ctx, keys[start:min(start+deleteWindow, len(keys))]); err != nil {
			return start, err
		}
	}
	return len(keys), nil
}

// deleteAll sends a delete marker for each key, then waits for them all.
func (s *Store[T]) deleteAll(ctx context.Context, keys []string) error {
	acks := make([]jetstream.PubAckFuture, 0, len(keys))
	for _, key := range keys {
		f, err := s.js.PublishMsgAsync(s.message(ctx, key, nil, opDelete))
		if err != nil {
			return fmt.Errorf("%s: deleting %s: %w", s.kind.Name, key, err)
		}
		acks = append(acks, f)
	}
	for i, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("%s: deleting %s: %w", s.kind.Name, keys[i], err)
		case <-ctx.Done():
			return fmt.Errorf("%s: deleting under a prefix: %w", s.kind.Name, ctx.Err())
		}
	}
	return nil
}
