package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/shared/ratelimit"
	"github.com/heraldhq/herald/shared/tenant"
)

// Limiter is the shared rate limiter (ratelimit.Limiter).
type Limiter interface {
	AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Decision, error)
}

// PlanOf says which plan a tenant is on (tenant.Cache): its name and what
// it allows.
type PlanOf interface {
	Plan(id string, plans tenant.Plans) (string, tenant.Plan)
}

// plan is the plan tenant id is on; without a registry, none (no limits).
func (s *Service) plan(id string) tenant.Plan {
	if s.cfg.Registry == nil {
		return tenant.Plan{}
	}
	_, p := s.cfg.Registry.Plan(id, s.cfg.Plans)
	return p
}

// intake are the operations that hand Herald work: a tenant's requests to
// them count against its plan's rate_per_minute. A webhook redelivery
// draws more for each webhook it sends after the first
// (admitRedelivery). Previewing and setting a template are among them:
// each renders the tenant's template, up to the bounds of package
// templates.
var intake = map[string]bool{
	"publish-event": true, "send-notification": true, "retry-notification": true,
	"redeliver-webhooks": true, "preview-template": true, "put-template": true,
}

// limiterTimeout bounds asking Redis: a request waits no longer than this
// for a limit it then goes without.
const limiterTimeout = 250 * time.Millisecond

// limitRate is the middleware that holds a tenant key's intake requests to
// its plan's rate, shared by every replica through Redis: within it, the
// answer carries the IETF RateLimit-Policy and RateLimit fields; beyond
// it, 429 with Retry-After. Admin keys are operators, not held. Redis
// unavailable fails open — the request is work accepted, not sent, and the
// delivery workers, which hold the rate on what providers see, fail closed
// — and is counted (herald.api.rate_limit.unchecked).
func (s *Service) limitRate(ctx huma.Context, next func(huma.Context)) {
	p := principal(ctx.Context())
	if !intake[ctx.Operation().OperationID] || p.Tenant == "" {
		next(ctx)
		return
	}
	name, limit, limited := s.intakeRate(p.Tenant)
	if !limited {
		next(ctx)
		return
	}
	d, checked := s.takeIntake(ctx.Context(), p.Tenant, limit, 1)
	if !checked {
		next(ctx)
		return
	}
	for k, v := range d.Headers(name) {
		ctx.SetHeader(k, v)
	}
	if !d.Allowed {
		_ = huma.WriteErr(s.api, ctx, http.StatusTooManyRequests, fmt.Sprintf("%s; retry after %s seconds",
			rateExceeded(name, limit), d.Headers(name)["Retry-After"]))
		return
	}
	next(ctx)
}

// intakeRate is the rate a tenant's requests are held to, and its plan's
// name; limited is false without one (no limiter or registry, or a plan
// without a rate).
func (s *Service) intakeRate(tenant string) (name string, limit ratelimit.Limit, limited bool) {
	if s.cfg.Limiter == nil || s.cfg.Registry == nil {
		return "", ratelimit.Limit{}, false
	}
	name, plan := s.cfg.Registry.Plan(tenant, s.cfg.Plans)
	perMinute, burst, limited := plan.Rate()
	return name, ratelimit.Limit{PerMinute: perMinute, Burst: burst}, limited
}

// takeIntake takes n, all or none, from the tenant's allowance. checked is
// false when Redis did not answer: counted and logged, and the caller
// lets the request through.
func (s *Service) takeIntake(ctx context.Context, tenant string, limit ratelimit.Limit, n int) (d ratelimit.Decision, checked bool) {
	lctx, cancel := context.WithTimeout(ctx, limiterTimeout)
	defer cancel()
	d, err := s.cfg.Limiter.AllowN(lctx, "intake:"+tenant, limit, n)
	if err != nil {
		s.unchecked(ctx, tenant, err)
		return d, false
	}
	return d, true
}

// unchecked counts and logs a request let through unchecked: Redis did not
// answer.
func (s *Service) unchecked(ctx context.Context, tenant string, err error) {
	s.metrics.unchecked.Add(ctx, 1, metric.WithAttributes(attribute.String("tenant", s.metrics.tenants.Value(tenant))))
	s.cfg.Logger.WarnContext(ctx, "rate limit not checked: redis unavailable; accepting", "tenant", tenant, "error", err)
}

// rateExceeded begins a 429's detail: the plan's rate.
func rateExceeded(plan string, limit ratelimit.Limit) string {
	return fmt.Sprintf("rate limit exceeded: plan %s allows %d requests a minute (burst %d)", plan, limit.PerMinute, limit.Burst)
}
