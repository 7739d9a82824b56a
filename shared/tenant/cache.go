package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Cache is the whole registry in memory, kept current by a KV watch, for
// the paths that read a tenant per event or per request. A change reaches
// it as soon as the server delivers it to the watch — well within a second
// on a healthy connection.
type Cache struct {
	watcher jetstream.KeyWatcher
	cancel  context.CancelFunc
	done    chan struct{}
	stop    sync.Once

	mu      sync.RWMutex
	tenants map[string]Tenant
}

// Watch binds to the bucket and starts following it; it returns once every
// tenant registered when it began is loaded (ctx bounds that wait, not
// the watch). Stop ends the watch.
func Watch(ctx context.Context, js jetstream.JetStream) (*Cache, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return nil, fmt.Errorf("tenant: bucket %s: %w", Bucket, err)
	}
	// The watch outlives ctx and ends with Stop, which cancels its context
	// too: nats.go keeps a goroutine per watch until its context ends.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w, err := kv.WatchAll(wctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("tenant: watching %s: %w", Bucket, err)
	}
	c := &Cache{watcher: w, cancel: cancel, done: make(chan struct{}), tenants: map[string]Tenant{}}
	if err := c.load(ctx); err != nil {
		_ = w.Stop()
		cancel()
		return nil, err
	}
	go c.follow()
	return c, nil
}

// load applies the watch's updates up to its mark that every key present
// when it began was delivered.
func (c *Cache) load(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("tenant: loading %s: %w", Bucket, ctx.Err())
		case entry, ok := <-c.watcher.Updates():
			if !ok {
				return fmt.Errorf("tenant: loading %s: the watch ended", Bucket)
			}
			if entry == nil {
				return nil
			}
			c.apply(entry)
		}
	}
}

// follow applies updates until the watch is stopped.
func (c *Cache) follow() {
	defer close(c.done)
	for entry := range c.watcher.Updates() {
		if entry != nil {
			c.apply(entry)
		}
	}
}

// apply records one change. A value that is not a tenant (a hand edit
// gone wrong) counts as no tenant: its traffic is dead-lettered as from an
// unknown tenant, where an operator sees it, rather than admitted under
// rules nobody can read.
func (c *Cache) apply(entry jetstream.KeyValueEntry) {
	var t Tenant
	ok := entry.Operation() == jetstream.KeyValuePut && json.Unmarshal(entry.Value(), &t) == nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.tenants[entry.Key()] = t
	} else {
		delete(c.tenants, entry.Key())
	}
}

// Lookup returns the tenant with this id, as last seen.
func (c *Cache) Lookup(id string) (Tenant, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tenants[id]
	return t, ok
}

// Plan is the plan tenant id is on, by name, as plans define it. A tenant
// the registry does not know — admitted only without
// tenants.require_registered — or whose plan plans lacks is on no plan,
// named "", and nothing limits it.
func (c *Cache) Plan(id string, plans Plans) (string, Plan) {
	t, ok := c.Lookup(id)
	if !ok {
		return "", Plan{}
	}
	plan, ok := plans[t.Plan]
	if !ok {
		return "", Plan{}
	}
	return t.Plan, plan
}

// Stop ends the watch and waits for the cache to stop updating. Lookups
// keep answering with the last values seen.
func (c *Cache) Stop() {
	c.stop.Do(func() {
		_ = c.watcher.Stop()
		c.cancel()
	})
	<-c.done
}

// What Admit refuses. The errors it returns wrap these and read as
// dead-letter reasons: `unknown tenant "x"`, `tenant "x" is suspended`.
var (
	ErrUnknown   = errors.New("unknown tenant")
	ErrSuspended = errors.New("suspended")
)

// Admit says whether traffic for tenant id may pass: nil, or an error
// wrapping ErrSuspended for a suspended tenant, or ErrUnknown for one that
// is not registered when requireRegistered (tenants.require_registered).
// Without it, unregistered tenants pass, as they did before the registry.
func (c *Cache) Admit(id string, requireRegistered bool) error {
	t, ok := c.Lookup(id)
	switch {
	case !ok && requireRegistered:
		return fmt.Errorf("%w %q", ErrUnknown, id)
	case ok && t.Status == Suspended:
		return idError(id, ErrSuspended)
	}
	return nil
}
