// Package app assembles Herald's services into one process: it connects to
// NATS (and Redis), applies the stream declarations, starts the services the
// configuration names, and serves health and metrics on one HTTP listener
// (operations) and, when a service answers outsiders, the API and document
// links on another (public). `herald run` and `herald dev` use it; so do
// the end-to-end tests.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/inbound"
	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/circuits"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/health"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/redact"
	"github.com/heraldhq/herald/shared/redisconn"
	"github.com/heraldhq/herald/shared/telemetry"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// service is the lifecycle every Herald service shares.
type service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// App is one running Herald process.
type App struct {
	// dev is herald dev: plain http on loopback, so the console's cookie
	// cannot be Secure.
	dev    bool
	cfg    Config
	logger *slog.Logger
	tel    *telemetry.Telemetry
	// tenants bounds the tenant label across every service of the process.
	tenants *telemetry.Labels
	// registry is the tenant registry, watched once for every service.
	registry *tenant.Cache
	// history is the notification index, opened once for the history
	// service and the api; nil until one of them needs it.
	history *history.Store
	// public is the public listener's routes; services that answer
	// outsiders (api) add theirs when they are built. nil when none runs.
	public   *http.ServeMux
	apiC     api.Config
	inboundC inbound.Config
	// keyring opens tenants' provider accounts; nil without a master key.
	keyring *vault.Keyring
	// beforeServices runs once the streams exist, before any service
	// starts (dev registers its sample tenant there).
	beforeServices func(context.Context) error
	tracer         trace.TracerProvider
	// flushTraces exports the spans still buffered, when this App made
	// the tracer provider.
	flushTraces func(context.Context) error
	routerC     router.Config
	workflowC   workflow.Config
	emailC      delivery.Config
	emailA      email.ChannelConfig
	textC       map[event.Channel]delivery.Config
	textA       map[event.Channel]sms.ChannelConfig
	webhookC    delivery.Config
	pushC       delivery.Config
	// pushSenders are the configured push providers, by device kind.
	pushSenders map[recipient.DeviceKind]pushSender
	inboxC      delivery.Config
	pdfC        pdf.Config
	dlqC        dlq.Config
	linkKey     []byte
	checks      health.Checks
	nc          *nats.Conn
	ncClosed    chan struct{}
	js          jetstream.JetStream
	rdb         redis.UniversalClient
	redisKind   redisconn.Kind
	masters     *redisconn.Masters // nil for one server
	// circuits shares the delivery services' breaker states (circuits.go).
	circuits   atomic.Pointer[circuits.Board]
	services   []service
	servers    []*http.Server
	opsAddr    net.Addr // http.listen
	publicAddr net.Addr // api.listen
	stopOnce   sync.Once
	stopErr    error
}

// New checks the whole configuration before anything connects, so a bad
// setting stops start-up with a message naming the field — every bad
// setting at once, not one per attempt.
func New(cfg Config, logger *slog.Logger) (*App, error) {
	cfg = cfg.WithDefaults()
	tel, err := telemetry.New()
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, logger: logger, tel: tel, tracer: cfg.TracerProvider,
		tenants: telemetry.NewTenantLabels(cfg.Metrics.MaxTenants)}
	if err := a.startTracing(); err != nil {
		return nil, err
	}
	errs := []error{cfg.Validate()}
	if len(cfg.Redis.ClusterAddrs) > 0 {
		if cfg.Redis.URL != "" {
			return nil, errors.New("redis.cluster_addrs: and redis.url (or REDIS_URL) name Redis twice: give one")
		}
		cfg.Redis.URL = "redis+cluster://" + strings.Join(cfg.Redis.ClusterAddrs, ",")
		a.cfg.Redis.URL = cfg.Redis.URL
	}
	if cfg.Redis.URL != "" {
		rdb, kind, err := redisconn.Open(cfg.Redis.URL, cfg.Redis.TLS)
		if err != nil {
			return nil, fmt.Errorf("redis.url: %w", redact.Error(err, cfg.Redis.URL))
		}
		a.rdb, a.redisKind = rdb, kind
	}
	for _, name := range cfg.Services {
		if m, ok := moduleNamed(name); ok {
			if err := m.configure(a); !errors.Is(err, errReported) {
				errs = append(errs, err)
			}
		}
	}
	linkKey, err := LinkSecret(cfg)
	a.linkKey = linkKey
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		if a.rdb != nil {
			_ = a.rdb.Close()
		}
		if a.flushTraces != nil {
			_ = a.flushTraces(context.Background())
		}
		return nil, err
	}
	return a, nil
}

// startTracing makes the OTLP tracer provider the OTEL_* variables ask for,
// unless the configuration brought its own.
func (a *App) startTracing() error {
	getenv := a.cfg.Getenv
	if a.tracer != nil || getenv == nil || !telemetry.TracingEnabled(getenv) {
		return nil
	}
	name := "herald"
	if len(a.cfg.Services) == 1 {
		name += "-" + a.cfg.Services[0]
	}
	tp, err := telemetry.NewTracerProvider(context.Background(), name, getenv)
	if err != nil {
		return err
	}
	a.tracer, a.flushTraces = tp, tp.Shutdown
	return nil
}

// Start connects, applies the streams, starts the services and the HTTP
// listener. On error, whatever started is stopped again.
func (a *App) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			_ = a.Stop(context.WithoutCancel(ctx))
		}
	}()
	if err := a.connect(ctx); err != nil {
		return err
	}
	if !a.cfg.Streams.SkipApply {
		if err := a.applyStreams(ctx); err != nil {
			return err
		}
	}
	if a.beforeServices != nil {
		if err := a.beforeServices(ctx); err != nil {
			return err
		}
	}
	if err := a.startHTTP(ctx); err != nil {
		return err
	}
	for _, name := range a.cfg.Services {
		m, _ := moduleNamed(name) // New checked every name
		svc, err := m.build(a, ctx)
		if err != nil {
			return err
		}
		if err := svc.Start(ctx); err != nil {
			return err
		}
		a.services = append(a.services, svc)
		a.logger.InfoContext(ctx, "service started", "service", name)
	}
	return nil
}

// HTTPAddr is the operations address: health, readiness, metrics.
func (a *App) HTTPAddr() string { return a.opsAddr.String() }

// APIAddr is the public address: the HTTP API, document links; "" when
// no service of this process answers outsiders (ServesOutsiders).
func (a *App) APIAddr() string {
	if a.publicAddr == nil {
		return ""
	}
	return a.publicAddr.String()
}

// Stop drains the services (in-flight messages finish and are
// acknowledged), then closes connections. ctx bounds the drain. Calling it
// again returns the first call's result.
func (a *App) Stop(ctx context.Context) error {
	a.stopOnce.Do(func() { a.stopErr = a.stop(ctx) })
	return a.stopErr
}

func (a *App) stop(ctx context.Context) error {
	var errs []error
	for i := len(a.services) - 1; i >= 0; i-- {
		errs = append(errs, a.services[i].Stop(ctx))
	}
	a.services = nil
	if b := a.circuits.Swap(nil); b != nil {
		b.Close()
	}
	if a.registry != nil {
		a.registry.Stop()
	}
	for _, srv := range a.servers {
		errs = append(errs, srv.Shutdown(ctx))
	}
	if a.nc != nil {
		// Drain flushes pending publishes and acks before closing.
		errs = append(errs, a.nc.Drain())
		select {
		case <-a.ncClosed:
		case <-ctx.Done():
			a.nc.Close()
		}
	}
	if a.masters != nil {
		a.masters.Close()
	}
	if a.rdb != nil {
		errs = append(errs, a.rdb.Close())
	}
	if a.history != nil {
		errs = append(errs, a.history.Close())
	}
	errs = append(errs, a.tel.Shutdown(ctx))
	if a.flushTraces != nil {
		errs = append(errs, a.flushTraces(ctx))
	}
	return errors.Join(errs...)
}

// RedisURL is the Redis this process uses, password hidden; "" if none.
func (a *App) RedisURL() string { return redact.URL(a.cfg.Redis.URL) }

// HistoryURL is the notification index this process uses, password
// hidden; "" if none.
func (a *App) HistoryURL() string { return redact.URL(a.cfg.History.URL) }

// ProviderNames lists the email provider chain, in order.
func (a *App) ProviderNames() []string {
	return names(a.emailA.Providers)
}

// tenantCache is the process's view of the tenant registry, watched from
// the first service that asks.
func (a *App) tenantCache(ctx context.Context) (*tenant.Cache, error) {
	if a.registry == nil {
		c, err := tenant.Watch(ctx, a.js)
		if err != nil {
			return nil, fmt.Errorf("tenants: %w", err)
		}
		a.registry = c
	}
	return a.registry, nil
}
