package resource

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/kvmirror"
)

// Cache is every record of a kind in memory, kept current by a watch of
// its bucket, for the paths that would ask about every message: an answer
// costs a map read, not a round trip. A change reaches it as soon as the
// server delivers it to the watch — well within a second on a healthy
// connection.
type Cache[T any] struct {
	mirror *kvmirror.Mirror[T]
}

// Watch binds to kind's bucket and starts following it; it returns once
// every record present when it began is loaded (ctx bounds that wait, not
// the watch). A value that does not decode is what kind.Unreadable says.
// Stop ends the watch.
func Watch[T any](ctx context.Context, js jetstream.JetStream, kind Kind[T]) (*Cache[T], error) {
	m, err := kvmirror.Watch(ctx, js, kind.Bucket, kind.read)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind.Name, err)
	}
	return &Cache[T]{mirror: m}, nil
}

// Get returns the record at key as last seen.
func (c *Cache[T]) Get(key string) (T, bool) { return c.mirror.Get(key) }

// Stop ends the watch and waits for the cache to stop updating; Get keeps
// answering with the last records seen.
func (c *Cache[T]) Stop() { c.mirror.Stop() }
