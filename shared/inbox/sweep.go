package inbox

import (
	"context"
	"fmt"
	"strings"
)

// Swept is what a sweep dropped.
type Swept struct {
	// Items are the items dropped, Feeds the feeds they were dropped from.
	Items, Feeds int
	// Tenants are the items dropped, by tenant.
	Tenants map[string]int
	// More says the sweep stopped at its bound with feeds left unread:
	// the next one goes on (a changed feed is listed last, after those
	// not yet read).
	More bool
}

// SweepAll applies each tenant's limits (limits) to every feed in the
// store, written to or not — a feed nobody writes to loses its old items
// too. It changes at most most feeds (0: no bound), so that one pass after
// a long pause, or a tenant shortening its retention, is a bounded burst
// of writes.
func (s *Store) SweepAll(ctx context.Context, limits func(tenant string) Limits, most int) (Swept, error) {
	return s.sweepKeys(ctx, "*.*", limits, most)
}

// sweepKeys sweeps the feeds whose index keys match filter.
func (s *Store) sweepKeys(ctx context.Context, filter string, limits func(string) Limits, most int) (Swept, error) {
	swept := Swept{Tenants: map[string]int{}}
	listing, stop := context.WithCancel(ctx)
	keys, err := s.kv.ListKeysFiltered(listing, filter)
	if err != nil {
		stop()
		return swept, fmt.Errorf("inbox: listing the feeds (%s): %w", filter, err)
	}
	// A pass that ends early leaves the lister's goroutine sending keys
	// nobody reads: cancelled and drained, it ends.
	defer func() {
		stop()
		for range keys.Keys() {
		}
	}()
	for key := range keys.Keys() {
		if most > 0 && swept.Feeds >= most {
			swept.More = true
			return swept, nil
		}
		tenant, token, ok := strings.Cut(key, ".")
		if !ok {
			continue
		}
		n, err := s.sweepOne(ctx, tenant, token, limits(tenant).WithDefaults())
		if err != nil {
			return swept, err
		}
		if n > 0 {
			swept.Items, swept.Feeds, swept.Tenants[tenant] = swept.Items+n, swept.Feeds+1, swept.Tenants[tenant]+n
		}
	}
	return swept, nil
}
