package domains

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/resource"
)

// Cache is every tenant's sending domains in memory, kept current by a KV
// watch, for the delivery workers, which would ask about every email: an
// answer costs a map read, not a round trip. A provider's new word reaches
// it as soon as the server delivers it to the watch — well within a second
// on a healthy connection.
type Cache struct {
	records *resource.Cache[Entry]
}

// Watch binds to the bucket and starts following it; it returns once every
// domain present when it began is loaded (ctx bounds that wait, not the
// watch). Stop ends the watch.
//
// A value that does not read as an entry (a hand edit gone wrong) counts
// as no domain: not verified, which is the side to err on for a domain
// email is sent from.
func Watch(ctx context.Context, js jetstream.JetStream) (*Cache, error) {
	records, err := resource.Watch(ctx, js, Domains)
	if err != nil {
		return nil, err
	}
	return &Cache{records: records}, nil
}

// Get returns the tenant's entry for domain as last seen, or ErrNotFound.
func (c *Cache) Get(_ context.Context, tenant, domain string) (Entry, error) {
	e, ok := c.records.Get(key(tenant, domain))
	if !ok {
		return Entry{}, ErrNotFound
	}
	return e, nil
}

// Verified is Store.Verified, answered from memory.
func (c *Cache) Verified(ctx context.Context, tenant, domain string) (bool, Entry, error) {
	e, err := c.Get(ctx, tenant, domain)
	if err != nil {
		return false, Entry{}, err
	}
	return e.Status == Verified, e, nil
}

// Stop ends the watch and waits for the cache to stop updating.
func (c *Cache) Stop() { c.records.Stop() }
