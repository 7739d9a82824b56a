package delivery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Provider is an email provider with the name it is known by in logs,
// metrics and the ledger.
type Provider struct {
	Name string
	email.Provider
}

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

// Config configures email delivery.
type Config struct {
	// From is the From header of every email, "Name <address>". Required.
	From string
	// Providers are tried in order on every try, stopping at the first that
	// accepts the message. Required.
	Providers []Provider
	// Locker guards each dedupe key across workers. Required: a worker
	// never sends unguarded.
	Locker Locker
	// Ledger records outcomes. Defaults to the "deliveries" bucket.
	Ledger Ledger
	// Documents is where rendered documents are read. Defaults to the
	// "documents" object store.
	Documents *documents.Store
	// AttachMaxBytes is the largest document attached to an email; larger
	// ones are linked with Links. Defaults to 5 MiB.
	AttachMaxBytes int64
	// Registry refuses the notifications of a suspended tenant: they are
	// dead-lettered with its reason before anything is leased or recorded,
	// to be redriven once the tenant is active again. Whether a tenant must
	// be registered is the router's check, not repeated here. Defaults to
	// none: every tenant is served.
	Registry Tenants
	// Routes picks each tenant's provider chain (of Providers and its own
	// accounts) and From (TenantRoutes). Defaults to none: every tenant's
	// notifications go through Providers, as From.
	Routes Routes
	// Links signs download links for documents too large to attach.
	// Without it, every document is attached whatever its size.
	Links *documents.Signer
	// Concurrency is how many emails are sent at once per priority.
	// Defaults to 8.
	Concurrency int
	// MaxTries is how many passes over the providers a notification gets
	// before it is given up (failed, retryable) and dead-lettered. Waiting
	// for another worker's lease is not a try. Defaults to 10.
	MaxTries int
	// ProviderTimeout bounds one provider call. Defaults to 10s.
	ProviderTimeout time.Duration
	// RetryDelay is how long a delivery waits after its first failed try;
	// it doubles with each further delivery, up to five minutes. It is also
	// how long a worker waits before looking again at a key another worker
	// holds. Defaults to 2s.
	RetryDelay time.Duration
	// LockTTL is how long a lease on a dedupe key lasts. It must outlive the
	// longest send: every provider timing out in turn, and then some.
	// Defaults to twice the consumer's AckWait, or the providers' timeouts
	// plus 30s if that is longer.
	LockTTL time.Duration

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
}

// WithDefaults returns the config with every unset field filled in
// (LockTTL is filled in at Start, once AckWait is known).
func (c Config) WithDefaults() Config {
	c.Concurrency = cmp.Or(c.Concurrency, 8)
	c.AttachMaxBytes = cmp.Or(c.AttachMaxBytes, documents.DefaultAttachMaxBytes)
	c.ProviderTimeout = cmp.Or(c.ProviderTimeout, 10*time.Second)
	c.MaxTries = cmp.Or(c.MaxTries, 10)
	c.RetryDelay = cmp.Or(c.RetryDelay, 2*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
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
	var problems []string
	if _, err := netmail.ParseAddress(c.From); err != nil {
		problems = append(problems, fmt.Sprintf("email.from: %q is not an address such as \"Orders <orders@example.com>\": %v", c.From, err))
	}
	if len(c.Providers) == 0 {
		problems = append(problems, "email.providers: at least one provider is required")
	}
	for i, p := range c.Providers {
		if p.Name == "" || p.Provider == nil {
			problems = append(problems, fmt.Sprintf("email.providers[%d]: provider is not set up", i))
		}
	}
	if c.Locker == nil {
		problems = append(problems, "redis.url: required by email delivery, which never sends without its lock (REDIS_URL)")
	}
	if c.Concurrency < 1 {
		problems = append(problems, fmt.Sprintf("email.concurrency: must be 1 or more (got %d)", c.Concurrency))
	}
	if c.ProviderTimeout < 100*time.Millisecond {
		problems = append(problems, fmt.Sprintf("email.timeout: %s is too short (at least 100ms)", c.ProviderTimeout))
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
	return max(2*ackWait, time.Duration(len(c.Providers))*c.ProviderTimeout+30*time.Second)
}
