package bench

import (
	"context"
	"fmt"
	"math"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ordering"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/ratelimit"
	"github.com/heraldhq/herald/shared/suppression"
	tenants "github.com/heraldhq/herald/shared/tenant"
)

// A run is measured as Herald runs for the tenants of a multi-tenant
// service, every per-tenant check on its path: the run's tenant is
// registered (and events of unregistered tenants refused, as
// tenants.require_registered does by default) on a plan with a rate and a
// monthly quota on every channel — each notification is counted, and the
// rate is asked before each pull — and the tenant has suppressed addresses,
// so each delivery's lookup searches a list that is not empty. The route is
// ordered, as routes carrying a document are by default: each revision is
// registered by the router and settled by its worker. The plan's
// limits are set high enough that neither stops the run: what is measured
// is their cost, not their effect. Config.Plain leaves all of it out.
const (
	benchPlan = "bench"
	// planRate is the bench plan's rate: a million a minute, well above
	// what one machine sends.
	planRate = 1_000_000
	// suppressed is how many addresses the tenant has suppressed: none of
	// the workload's.
	suppressed = 1000
)

// features are the per-tenant checks a run makes (see above); the zero
// value, none.
type features struct {
	registry *tenants.Cache
	plans    tenants.Plans
	rates    *delivery.Rates
	seq      *ordering.Redis
}

// startFeatures registers the run's tenant on the bench plan and suppresses
// addresses for it. The registry's cache stops with ctx.
func (e *env) startFeatures(ctx context.Context, redisPrefix string) (*features, error) {
	rate := planRate
	quotas := map[event.Channel]int64{}
	for _, c := range event.Channels {
		quotas[c] = math.MaxInt64 / 2
	}
	plans := tenants.BuiltinPlans()
	plans[benchPlan] = tenants.Plan{Description: "herald bench: every limit on, none reached.", RatePerMinute: &rate, MonthlyQuota: quotas}
	reg, err := tenants.Open(ctx, e.js, plans)
	if err != nil {
		return nil, fmt.Errorf("bench: tenants: %w", err)
	}
	if _, err := reg.Create(ctx, tenants.Tenant{ID: tenant, Name: "Herald bench", Plan: benchPlan, Status: tenants.Active}); err != nil {
		return nil, fmt.Errorf("bench: registering the tenant: %w", err)
	}
	store, err := suppression.Open(ctx, e.js)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	for i := range suppressed {
		if _, err := store.Add(ctx, suppression.Entry{Tenant: tenant, Address: fmt.Sprintf("bounced-%d@bench.invalid", i),
			Reason: suppression.Reasons[0], Source: "bench"}); err != nil {
			return nil, fmt.Errorf("bench: suppressing: %w", err)
		}
	}
	cache, err := tenants.Watch(ctx, e.js)
	if err != nil {
		return nil, fmt.Errorf("bench: tenants: %w", err)
	}
	context.AfterFunc(ctx, cache.Stop)
	f := &features{registry: cache, plans: plans, seq: ordering.New(e.rdb, redisPrefix)}
	f.rates = &delivery.Rates{Limiter: ratelimit.New(e.rdb, redisPrefix), Rate: func(id string) (ratelimit.Limit, bool) {
		_, plan := cache.Plan(id, plans)
		perMinute, burst, limited := plan.Rate()
		return ratelimit.Limit{PerMinute: perMinute, Burst: burst}, limited
	}}
	return f, nil
}

// routing is what the router checks of each event's tenant.
func (f *features) routing(c router.Config) router.Config {
	if f != nil {
		c.Registry, c.RequireRegistered, c.Plans, c.Sequences = f.registry, true, f.plans, f.seq
		for i := range c.Routes {
			c.Routes[i].Ordered = new(bool)
			*c.Routes[i].Ordered = true
		}
	}
	return c
}

// delivering is what delivery checks of each notification's tenant.
func (f *features) delivering(c delivery.Config) delivery.Config {
	if f != nil {
		c.Registry, c.Quotas, c.Rates, c.Sequences = f.registry, quota.Plans{Tenants: f.registry, Plans: f.plans}, f.rates, f.seq
	}
	return c
}
