package delivery

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/telemetry"
)

var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

type metrics struct {
	channel   attribute.KeyValue
	outcomes  metric.Int64Counter
	ambiguous metric.Int64Counter
	lockBusy  metric.Int64Counter
	unguarded metric.Int64Counter
	quota     metric.Int64Counter
	held      metric.Int64Counter
	latency   metric.Float64Histogram
	endToEnd  metric.Float64Histogram
	tenants   *telemetry.Labels
	// platform names the platform's providers: a tenant's own accounts,
	// named by tenants, are labelled "tenant", so that tenants cannot grow
	// the provider label without bound.
	platform map[string]bool
}

// tenantAccount is the provider label of every tenant's own account.
const tenantAccount = "tenant"

func newMetrics(mp metric.MeterProvider, channel string, tenants *telemetry.Labels, platform []string) (metrics, error) {
	m := mp.Meter("github.com/heraldhq/herald/services/delivery")
	x := metrics{channel: attribute.String("channel", channel), tenants: tenants, platform: map[string]bool{"": true}}
	for _, p := range platform {
		x.platform[p] = true
	}
	var errs [8]error
	x.outcomes, errs[0] = m.Int64Counter("herald.deliveries",
		metric.WithDescription("Delivery outcomes by channel, provider (a platform provider, or tenant for a tenant's own account) and outcome: delivered, retry, failed, exhausted, fallback (failed, handed to the fallback's next channel), duplicate (already delivered, acknowledged unsent), duplicate_sent (sent twice: a lease expired), refused (the tenant is suspended), over_quota (refused past the tenant's monthly quota)."))
	x.ambiguous, errs[1] = m.Int64Counter("herald.delivery.ambiguous",
		metric.WithDescription("Tries where a provider may have accepted before failing (timeouts): the residual at-least-once window."))
	x.lockBusy, errs[2] = m.Int64Counter("herald.delivery.lock_contention",
		metric.WithDescription("Copies of a notification that found another worker holding its lease, and came back later."))
	x.unguarded, errs[3] = m.Int64Counter("herald.delivery.lock_unavailable",
		metric.WithDescription("Messages put back because Redis could not be asked for the lease; none is sent unguarded."))
	x.latency, errs[4] = m.Float64Histogram("herald.delivery.latency", metric.WithUnit("s"),
		metric.WithDescription("Time from the router planning a delivery to a provider accepting it."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	x.endToEnd, errs[5] = m.Float64Histogram("herald.notification.latency", metric.WithUnit("s"),
		metric.WithDescription("End to end: from the event being stored in its stream (ORDERS, INVENTORY) to a provider accepting its notification, routing and rendering included; a redriven or resent notification counts from its original event."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	x.quota, errs[6] = m.Int64Counter("herald.quota.events",
		metric.WithDescription("Monthly quota events by channel, tenant and event: warning (80 % used), exceeded (100 % used), refused (a notification over quota, dead-lettered unsent)."))
	x.held, errs[7] = m.Int64Counter("herald.delivery.rate_held",
		metric.WithDescription("Times a tenant's deliveries were held back, left waiting unpulled, by channel, tenant and reason: over_rate (its plan's rate_per_minute), unchecked (Redis did not answer; sending fails closed)."))
	return x, errors.Join(errs[:]...)
}

func (m metrics) rateHeld(ctx context.Context, tenant, reason string) {
	m.held.Add(ctx, 1, metric.WithAttributes(m.channel, attribute.String("tenant", m.tenants.Value(tenant)),
		attribute.String("reason", reason)))
}

func (m metrics) attrs(d notification.Delivery) metric.MeasurementOption {
	return metric.WithAttributes(m.channel, attribute.String("tenant", m.tenants.Value(d.Tenant)))
}

// providerLabel bounds the provider label: a platform provider's name, or
// "tenant".
func (m metrics) providerLabel(provider string) string {
	if !m.platform[provider] {
		return tenantAccount
	}
	return provider
}

func (m metrics) outcome(ctx context.Context, d notification.Delivery, provider, outcome string) {
	m.outcomes.Add(ctx, 1, metric.WithAttributes(m.channel, attribute.String("provider", m.providerLabel(provider)),
		attribute.String("outcome", outcome), attribute.String("tenant", m.tenants.Value(d.Tenant))))
}
