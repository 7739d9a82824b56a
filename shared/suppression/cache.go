package suppression

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/resource"
)

// Cache is every tenant's suppressions in memory, kept current by a KV
// watch, for the delivery workers, which ask about every notification: a
// lookup costs a map read, not a round trip. A suppression reaches it as
// soon as the server delivers it to the watch — well within a second on a
// healthy connection.
type Cache struct {
	records *resource.Cache[Entry]
}

// Watch binds to the bucket and starts following it; it returns once every
// suppression present when it began is loaded (ctx bounds that wait, not
// the watch). Stop ends the watch.
func Watch(ctx context.Context, js jetstream.JetStream) (*Cache, error) {
	records, err := resource.Watch(ctx, js, Suppressions)
	if err != nil {
		return nil, err
	}
	return &Cache{records: records}, nil
}

// unreadable is what a value that does not read as an entry (a hand edit
// gone wrong) counts as: it still suppresses its key's address, for
// holding a notification back is the safe side, and the entry says why.
func unreadable(key string, err error) (Entry, bool) {
	tokens := strings.Split(key, ".")
	e := Entry{Tenant: tokens[0], Reason: Manual, Detail: "unreadable entry " + key + ": " + err.Error()}
	if len(tokens) == 3 {
		e.Category = tokens[2]
	}
	return e, true
}

// Blocks returns, as last seen, the tenant's entry that keeps a
// notification of category from address on channel — the channel's or
// every channel's, the one blocking every notification before the
// category's — or ErrNotFound.
func (c *Cache) Blocks(_ context.Context, tenant string, channel event.Channel, address, category string) (Entry, error) {
	for _, k := range blocking(tenant, channel, address, category) {
		if e, ok := c.records.Get(k); ok {
			return e, nil
		}
	}
	return Entry{}, ErrNotFound
}

// Stop ends the watch and waits for the cache to stop updating.
func (c *Cache) Stop() { c.records.Stop() }
