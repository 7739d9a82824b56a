package delivery

import (
	"context"
	"math"
	"time"

	"github.com/heraldhq/herald/shared/ratelimit"
)

// Rates holds each tenant's sends to its plan's rate_per_minute: what
// providers see, across every channel and replica. Used with Fair (the
// loop holds an over-rate tenant back without pulling its deliveries);
// first come, first served has no per-tenant pull to hold back.
type Rates struct {
	// Limiter counts in Redis (ratelimit.Limiter).
	Limiter interface {
		AllowUpTo(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Decision, error)
	}
	// Rate is a tenant's plan's rate; false when it has none.
	Rate func(tenant string) (ratelimit.Limit, bool)
}

// rateUnchecked is how long a tenant with a rate is held back while Redis
// does not answer: sending fails closed, as the lease does.
const rateUnchecked = time.Second

// ready is the fair loop's Ready: how many of this tenant's deliveries
// may go now — any number without a rate; with one, up to the want the
// pull would take, from the allowance in one Redis round trip — and if
// none, when to ask again.
func (s *Service) ready(ctx context.Context, _, tenant string, want int) (int, time.Time) {
	r := s.cfg.Rates
	limit, limited := r.Rate(tenant)
	if !limited {
		return math.MaxInt, time.Time{}
	}
	d, err := r.Limiter.AllowUpTo(ctx, "send:"+tenant, limit, want)
	switch {
	case err != nil:
		s.metrics.rateHeld(ctx, tenant, "unchecked")
		s.cfg.Logger.WarnContext(ctx, "rate limit unchecked: redis unavailable; holding the tenant's sends", "tenant", tenant, "error", err)
		return 0, time.Now().Add(rateUnchecked)
	case !d.Allowed:
		s.metrics.rateHeld(ctx, tenant, "over_rate")
		return 0, time.Now().Add(d.RetryAfter)
	}
	return d.Granted, time.Time{}
}
