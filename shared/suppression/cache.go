package suppression

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Cache is every tenant's suppressions in memory, kept current by a KV
// watch, for the delivery workers, which ask about every notification: a
// lookup costs a map read, not a round trip. A suppression reaches it as
// soon as the server delivers it to the watch — well within a second on a
// healthy connection.
type Cache struct {
	watcher jetstream.KeyWatcher
	cancel  context.CancelFunc
	done    chan struct{}
	stop    sync.Once

	mu      sync.RWMutex
	entries map[string]Entry // by key
}

// Watch binds to the bucket and starts following it; it returns once every
// suppression present when it began is loaded (ctx bounds that wait, not
// the watch). Stop ends the watch.
func Watch(ctx context.Context, js jetstream.JetStream) (*Cache, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("suppression: bucket %s: %w", Bucket, err)
	}
	// The watch outlives ctx and ends with Stop, which cancels its context
	// too: nats.go keeps a goroutine per watch until its context ends.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := kv.WatchAll(wctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("suppression: watching %s: %w", Bucket, err)
	}
	c := &Cache{watcher: w, cancel: cancel, done: make(chan struct{}), entries: map[string]Entry{}}
	for loaded := false; !loaded; {
		select {
		case <-ctx.Done():
			_ = w.Stop()
			cancel()
			return nil, fmt.Errorf("suppression: loading %s: %w", Bucket, ctx.Err())
		case entry, ok := <-w.Updates():
			if !ok {
				cancel()
				return nil, fmt.Errorf("suppression: loading %s: the watch ended", Bucket)
			}
			loaded = entry == nil
			if !loaded {
				c.apply(entry)
			}
		}
	}
	go c.follow()
	return c, nil
}

func (c *Cache) follow() {
	defer close(c.done)
	for entry := range c.watcher.Updates() {
		if entry != nil {
			c.apply(entry)
		}
	}
}

// apply records one change. A value that does not read as an entry (a hand
// edit gone wrong) still suppresses its key's address: holding a
// notification back is the safe side, and Get says why.
func (c *Cache) apply(entry jetstream.KeyValueEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if entry.Operation() != jetstream.KeyValuePut {
		delete(c.entries, entry.Key())
		return
	}
	var e Entry
	if err := json.Unmarshal(entry.Value(), &e); err != nil {
		tenant, _, _ := strings.Cut(entry.Key(), ".")
		e = Entry{Tenant: tenant, Reason: Manual, Detail: "unreadable entry " + entry.Key() + ": " + err.Error()}
	}
	c.entries[entry.Key()] = e
}

// Get returns the tenant's entry for address as last seen, or ErrNotFound.
func (c *Cache) Get(_ context.Context, tenant, address string) (Entry, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[key(tenant, address)]
	if !ok {
		return Entry{}, ErrNotFound
	}
	return e, nil
}

// Stop ends the watch and waits for the cache to stop updating.
func (c *Cache) Stop() {
	c.stop.Do(func() {
		_ = c.watcher.Stop()
		c.cancel()
	})
	<-c.done
}
