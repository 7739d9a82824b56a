package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Locker guards a dedupe key while one worker works on it (lock.Redis).
type Locker interface {
	Acquire(ctx context.Context, key string, ttl time.Duration) (*lock.Lease, error)
}

// Ledger keeps the outcome of every dedupe key (ledger.Ledger).
type Ledger interface {
	Get(ctx context.Context, tenant, dedupeKey string) (ledger.Entry, error)
	Put(ctx context.Context, e *ledger.Entry) error
}

// Tenants is the tenant registry as delivery asks it (tenant.Cache): the
// error, when set, is why a tenant's notifications are not sent now.
type Tenants interface {
	Admit(tenant string, requireRegistered bool) error
}

// Suppressions says whether a tenant must not send a notification of a
// category to an address on a channel (suppression.Cache):
// suppression.ErrNotFound when it may.
type Suppressions interface {
	Blocks(ctx context.Context, tenant string, channel event.Channel, address, category string) (suppression.Entry, error)
}

// Preferences says whether a tenant's subscriber lets a notification of a
// category reach them on a channel (recipient.PreferenceCache).
type Preferences interface {
	Allows(tenant, subscriber, category string, ch event.Channel) bool
}

// Quotas says a tenant's monthly quota on a channel (quota.Plans).
type Quotas interface {
	Limit(tenant string, c event.Channel) quota.Limit
}

// Config configures the delivery of one channel.
type Config struct {
	// Channel is the adapter: what one try of a delivery sends. Required.
	Channel Channel
	// Section is the configuration file's section this channel is set in,
	// which Validate's messages name: "webhooks" for the webhook channel.
	// Defaults to the channel's name (email, sms, whatsapp).
	Section string
	// Locker guards each dedupe key across workers. Required: a worker
	// never sends unguarded.
	Locker Locker
	// Ledger records outcomes. Defaults to the "deliveries" bucket.
	Ledger Ledger
	// Sequences hold a notification of an ordered route while an earlier
	// revision of its order, to the same recipient on the same channel, is
	// pending, and release it when that one is settled (ordering.Redis,
	// ordering.go). Defaults to none: notifications are not held.
	Sequences Sequences
	// Registry refuses the notifications of a suspended tenant: they are
	// dead-lettered with its reason before anything is leased or recorded,
	// to be redriven once the tenant is active again. Whether a tenant must
	// be registered is the router's check, not repeated here. Defaults to
	// none: every tenant is served.
	Registry Tenants
	// Quotas, when set, count every notification against its tenant's
	// monthly quota on the channel (the QUOTAS counters) when it is first
	// claimed, before any provider is called: one over quota is not sent
	// but dead-lettered, "quota exceeded: email 100/100 (2026-12)", to be
	// redriven (and counted again) after an upgrade. Defaults to none:
	// nothing is counted.
	Quotas Quotas
	// Suppressions are the addresses each tenant must not be sent to: a
	// notification to one is recorded as suppressed, after its claim and
	// before it is counted or any provider is called — a status event, no
	// try spent, no dead letter. Defaults to the "suppressions" bucket,
	// followed in memory (suppression.Cache). A webhook's endpoint is not an
	// address and is not looked up.
	Suppressions Suppressions
	// Preferences are the subscribers' choices: a notification to a
	// subscriber in a category they may leave, on a channel they switched
	// off for it, is held back just before sending — recorded as
	// suppressed ("preference: alerts.sms switched off"), a status event,
	// no try spent, no dead letter — however long ago it was routed.
	// Defaults to the "preferences" bucket, followed in memory
	// (recipient.PreferenceCache).
	Preferences Preferences
	// Concurrency is how many messages are sent at once per priority.
	// Defaults to 8. Served fairly, it is the most: the sends in flight
	// follow the share of their time spent waiting on the provider, as
	// many as a slow provider needs, as few as the cores sustain when it
	// answers at once (leastInFlight).
	Concurrency int
	// MaxTries is how many passes over the providers a notification gets
	// before it is given up (failed, retryable) and dead-lettered. Waiting
	// for another worker's lease is not a try. Defaults to 10.
	MaxTries int
	// ProviderTimeout bounds one provider call. Defaults to 10s.
	ProviderTimeout time.Duration
	// RetryDelay is how long a delivery waits after its first failed try;
	// it doubles with each further delivery, up to MaxRetryDelay. It is also
	// how long a worker waits before looking again at a key another worker
	// holds. Defaults to 2s.
	RetryDelay time.Duration
	// MaxRetryDelay caps the wait between tries. Defaults to 5 minutes.
	MaxRetryDelay time.Duration
	// LockTTL is how long a lease on a dedupe key lasts. It must outlive the
	// longest send: every provider timing out in turn, and then some.
	// Defaults to twice the consumer's AckWait, or the providers' timeouts
	// plus 30s if that is longer.
	LockTTL time.Duration
	// BreakerFailures is how many transient failures in a row open a
	// provider's circuit: it is then skipped, not called, until
	// BreakerCooldown has passed and a probe succeeds. Defaults to 5;
	// negative disables the breakers.
	BreakerFailures int
	// BreakerCooldown defaults to 30s.
	BreakerCooldown time.Duration
	// Circuits is told each breaker's change (channel, the breaker's key —
	// the provider, or a tenant's account — and the state entered), without
	// blocking: the process shares them for the console. Defaults to none.
	Circuits func(channel, breaker, state string)
	// Platform names the platform's providers, for metric labels: any other
	// (a tenant's own account) is labelled "tenant", so tenants cannot grow
	// the provider label without bound.
	Platform []string

	// Logger defaults to discarding.
	Logger *slog.Logger
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider
	// Tenants bounds the tenant label of metrics; one is shared by every
	// service of a process (metrics.max_tenants). Defaults to
	// telemetry.DefaultMaxTenants tenants.
	Tenants *telemetry.Labels
	// TracerProvider, when set, traces every message handled; nil traces
	// nothing.
	TracerProvider trace.TracerProvider

	// Fair serves tenants in turn (scheduling.fair): a consumer per tenant
	// with a backlog, instead of one per priority taking deliveries first
	// come, first served. Weights are the priorities' shares of the
	// workers while all have work; Concurrency is then per priority too
	// (the pool is Concurrency × 3).
	Fair    bool
	Weights map[notification.Priority]int
	// Rates, with Fair, hold each tenant's sends to its plan's rate. Nil:
	// no rate.
	Rates *Rates
	// TenantWeight, with Fair, is a tenant's share of its priority while
	// other tenants have deliveries waiting too: its plan's weight
	// (tenant.Plan.Share). Asked at each of the tenant's pulls, so it
	// answers from memory (the registry's cache). Nil: every tenant
	// weighs 1.
	TenantWeight func(tenant string) int
}

// DefaultWeights share the workers 6:3:1 between critical, normal and low
// deliveries while all three have a backlog: critical first, and low never
// starved (a tenth of the workers at least).
var DefaultWeights = map[notification.Priority]int{
	notification.PriorityCritical: 6, notification.PriorityNormal: 3, notification.PriorityLow: 1,
}

// WithDefaults returns the config with every unset field filled in
// (LockTTL is filled in at Start, once AckWait is known).
func (c Config) WithDefaults() Config {
	c.Concurrency = cmp.Or(c.Concurrency, 8)
	c.BreakerFailures = cmp.Or(c.BreakerFailures, 5)
	c.BreakerCooldown = cmp.Or(c.BreakerCooldown, 30*time.Second)
	c.ProviderTimeout = cmp.Or(c.ProviderTimeout, 10*time.Second)
	c.MaxTries = cmp.Or(c.MaxTries, 10)
	c.RetryDelay = cmp.Or(c.RetryDelay, 2*time.Second)
	c.MaxRetryDelay = cmp.Or(c.MaxRetryDelay, 5*time.Minute)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.Weights == nil {
		c.Weights = DefaultWeights
	}
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	if c.Tenants == nil {
		c.Tenants = telemetry.NewTenantLabels(telemetry.DefaultMaxTenants)
	}
	return c
}

// Validate reports every problem, naming fields as in the YAML file.
func (c Config) Validate() error {
	if c.Channel == nil {
		return errors.New("delivery: no channel adapter (Config.Channel)")
	}
	name := c.Channel.Name()
	section := cmp.Or(c.Section, string(name))
	var problems []string
	if c.Locker == nil {
		problems = append(problems, fmt.Sprintf("redis.url: required by %s delivery, which never sends without its lock (REDIS_URL)", name))
	}
	if c.Concurrency < 1 {
		problems = append(problems, fmt.Sprintf("%s.concurrency: must be 1 or more (got %d)", section, c.Concurrency))
	}
	if c.ProviderTimeout < 100*time.Millisecond {
		problems = append(problems, fmt.Sprintf("%s.timeout: %s is too short (at least 100ms)", section, c.ProviderTimeout))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// lockTTL is LockTTL, or its default for a consumer with this AckWait.
func (c Config) lockTTL(ackWait time.Duration) time.Duration {
	if c.LockTTL > 0 {
		return c.LockTTL
	}
	return max(2*ackWait, time.Duration(c.Channel.LongestChain())*c.ProviderTimeout+30*time.Second)
}
