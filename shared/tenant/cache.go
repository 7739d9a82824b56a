package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/kvmirror"
)

// Cache is the whole registry in memory, kept current by a KV watch, for
// the paths that read a tenant per event or per request. A change reaches
// it as soon as the server delivers it to the watch — well within a second
// on a healthy connection.
type Cache struct {
	mirror *kvmirror.Mirror[Tenant]
}

// Watch binds to the bucket and starts following it; it returns once every
// tenant registered when it began is loaded (ctx bounds that wait, not
// the watch). Stop ends the watch.
//
// A value that is not a tenant (a hand edit gone wrong) counts as no
// tenant: its traffic is dead-lettered as from an unknown tenant, where an
// operator sees it, rather than admitted under rules nobody can read.
func Watch(ctx context.Context, js jetstream.JetStream) (*Cache, error) {
	m, err := kvmirror.Watch(ctx, js, Bucket, func(e jetstream.KeyValueEntry) (Tenant, bool) {
		var t Tenant
		return t, json.Unmarshal(e.Value(), &t) == nil
	})
	if err != nil {
		return nil, fmt.Errorf("tenant: %w", err)
	}
	return &Cache{mirror: m}, nil
}

// Lookup returns the tenant with this id, as last seen.
func (c *Cache) Lookup(id string) (Tenant, bool) { return c.mirror.Get(id) }

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

// Weight is tenant id's share of a priority beside other tenants with
// deliveries waiting: its plan's weight (Plan.Share), 1 on no plan.
// Answered from memory, for the fair loop's every pull.
func (c *Cache) Weight(id string, plans Plans) int {
	_, plan := c.Plan(id, plans)
	return plan.Share()
}

// Stop ends the watch and waits for the cache to stop updating. Lookups
// keep answering with the last values seen.
func (c *Cache) Stop() { c.mirror.Stop() }

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
