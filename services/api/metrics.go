package api

import (
	"context"
	"errors"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/shared/telemetry"
)

type metrics struct {
	tenants   *telemetry.Labels
	requests  metric.Int64Counter
	authFails metric.Int64Counter
	replays   metric.Int64Counter
	unchecked metric.Int64Counter
}

func newMetrics(mp metric.MeterProvider, tenants *telemetry.Labels) (metrics, error) {
	m := mp.Meter("github.com/heraldhq/herald/services/api")
	requests, err1 := m.Int64Counter("herald.api.requests",
		metric.WithDescription("HTTP API requests answered, by route, status and tenant (the key's; empty before authentication)."))
	authFails, err2 := m.Int64Counter("herald.api.auth.failures",
		metric.WithDescription("Requests refused by authentication, by reason: missing (no key), invalid (unknown or revoked key), scope (the key lacks the route's scope)."))
	replays, err3 := m.Int64Counter("herald.api.idempotent.replays",
		metric.WithDescription("Requests answered from the idempotency record of an earlier one with the same Idempotency-Key, by route and tenant."))
	unchecked, err4 := m.Int64Counter("herald.api.rate_limit.unchecked",
		metric.WithDescription("Intake requests accepted without checking the tenant's rate limit because Redis did not answer, by tenant."))
	return metrics{tenants: tenants, requests: requests, authFails: authFails, replays: replays, unchecked: unchecked},
		errors.Join(err1, err2, err3, err4)
}

// requestTenant carries the tenant a request turns out to act for, from
// authentication back out to the middleware that counts the request.
type requestTenant struct{ tenant string }

type requestTenantKey struct{}

// noteTenant records the tenant of the request in flight, for its metrics.
func noteTenant(ctx context.Context, tenant string) {
	if rt, ok := ctx.Value(requestTenantKey{}).(*requestTenant); ok {
		rt.tenant = tenant
	}
}

// measure is the outermost middleware: it counts every answered request.
func (s *Service) measure(ctx huma.Context, next func(huma.Context)) {
	rt := &requestTenant{}
	next(huma.WithValue(ctx, requestTenantKey{}, rt))
	op := ctx.Operation()
	s.metrics.requests.Add(ctx.Context(), 1, metric.WithAttributes(
		attribute.String("route", op.Method+" "+op.Path),
		attribute.String("status", strconv.Itoa(ctx.Status())),
		attribute.String("tenant", s.metrics.tenants.Value(rt.tenant))))
}

func (m metrics) authFailure(ctx context.Context, reason string) {
	m.authFails.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}

func (m metrics) replay(ctx context.Context, route, tenant string) {
	m.replays.Add(ctx, 1, metric.WithAttributes(attribute.String("route", route),
		attribute.String("tenant", m.tenants.Value(tenant))))
}
