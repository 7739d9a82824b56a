// Package app assembles Herald's services into one process: it connects to
// NATS (and Redis), applies the stream declarations, starts the services the
// configuration names, and serves health and metrics on one HTTP listener
// (operations) and document links on another (public). `herald run`
// and `herald dev` use it; so do the end-to-end tests.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/dlq/alert"
	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/health"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/redact"
	"github.com/heraldhq/herald/shared/telemetry"
	"github.com/heraldhq/herald/streams"
)

// service is the lifecycle every Herald service shares.
type service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// App is one running Herald process.
type App struct {
	cfg    Config
	logger *slog.Logger
	tel    *telemetry.Telemetry
	// tenants bounds the tenant label across every service of the process.
	tenants *telemetry.Labels
	tracer  trace.TracerProvider
	// flushTraces exports the spans still buffered, when this App made
	// the tracer provider.
	flushTraces func(context.Context) error
	routerC     router.Config
	emailC      delivery.Config
	pdfC        pdf.Config
	dlqC        dlq.Config
	linkKey     []byte
	checks      health.Checks
	nc          *nats.Conn
	ncClosed    chan struct{}
	js          jetstream.JetStream
	rdb         *redis.Client
	services    []service
	servers     []*http.Server
	opsAddr     net.Addr // http.listen
	publicAddr  net.Addr // api.listen
	stopOnce    sync.Once
	stopErr     error
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
	a.routerC = cfg.Router
	a.routerC.Logger = logger.With("service", "router")
	a.routerC.MeterProvider = tel.MeterProvider()
	a.routerC.Tenants = a.tenants
	a.routerC.TracerProvider = a.tracer
	a.routerC = a.routerC.WithDefaults()
	errs := []error{cfg.Validate(), a.routerC.Validate(), a.checkTemplates()}
	if cfg.Redis.URL != "" {
		opts, err := redis.ParseURL(cfg.Redis.URL)
		if err != nil {
			return nil, fmt.Errorf("redis.url: %w", redact.Error(err, cfg.Redis.URL))
		}
		a.rdb = redis.NewClient(opts)
	}
	if cfg.runs("delivery") {
		a.emailC, err = a.emailConfig()
		errs = append(errs, err)
	}
	a.pdfC = pdf.Config{Concurrency: cfg.PDF.Concurrency, Logger: logger.With("service", "pdf"),
		MeterProvider: tel.MeterProvider(), Tenants: a.tenants, TracerProvider: a.tracer}
	if cfg.runs("dlq") {
		a.dlqC, err = a.dlqConfig()
		errs = append(errs, err)
	}
	if d := cfg.Documents; d.LinkSecretEnv != "" || d.LinkSecretFile != "" {
		key, err := a.secret("documents.link_secret_env", d.LinkSecretEnv, d.LinkSecretFile)
		if err == nil && len(key) < 32 {
			err = fmt.Errorf("documents.link_secret_env: the link secret must be at least 32 bytes (got %d)", len(key))
		}
		a.linkKey = []byte(key)
		errs = append(errs, err)
	}
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

func (a *App) emailConfig() (delivery.Config, error) {
	c := delivery.Config{
		From: a.cfg.Email.From, Concurrency: a.cfg.Email.Concurrency,
		ProviderTimeout: a.cfg.Email.Timeout, LockTTL: a.cfg.Email.LockTTL, RetryDelay: a.cfg.Email.RetryDelay,
		AttachMaxBytes: a.cfg.Documents.AttachMaxBytes, MaxTries: a.cfg.Email.MaxTries,
		Logger: a.logger.With("service", "delivery", "channel", "email"), MeterProvider: a.tel.MeterProvider(),
		Tenants: a.tenants, TracerProvider: a.tracer,
	}
	if a.rdb != nil {
		c.Locker = lock.NewRedis(a.rdb, a.cfg.Redis.Prefix+"lock:")
	}
	providers, err := a.buildProviders(context.Background())
	if err != nil {
		return c, err
	}
	c.Providers = providers
	c = c.WithDefaults()
	return c, c.Validate()
}

func (a *App) dlqConfig() (dlq.Config, error) {
	c := dlq.Config{
		AlertWindow: a.cfg.DLQ.Alerts.Window, Sweep: a.cfg.DLQ.Sweep,
		Logger: a.logger.With("service", "dlq"), MeterProvider: a.tel.MeterProvider(),
		TracerProvider: a.tracer,
	}
	if a.rdb != nil {
		c.Locker = lock.NewRedis(a.rdb, a.cfg.Redis.Prefix+"lock:")
	}
	al := a.cfg.DLQ.Alerts
	if al.SlackURLEnv != "" || al.SlackURLFile != "" {
		u, err := a.secret("dlq.alerts.slack_url_env", al.SlackURLEnv, al.SlackURLFile)
		if err != nil {
			return c, err
		}
		c.Alerts = append(c.Alerts, &alert.Slack{URL: u})
	}
	if al.WebhookURLEnv != "" || al.WebhookURLFile != "" {
		u, err := a.secret("dlq.alerts.webhook_url_env", al.WebhookURLEnv, al.WebhookURLFile)
		if err != nil {
			return c, err
		}
		c.Alerts = append(c.Alerts, &alert.Webhook{URL: u})
	}
	return c, nil
}

// checkTemplates refuses routes that would publish emails no template can
// render: better a start-up error than a dead letter per recipient.
func (a *App) checkTemplates() error {
	if !slices.Contains(a.routerC.Channels, event.ChannelEmail) {
		return nil
	}
	composer, err := email.NewComposer("check <check@example.com>")
	if err != nil {
		return err
	}
	var problems []string
	for i, r := range a.routerC.Routes {
		if slices.Contains(r.Channels, event.ChannelEmail) && !composer.Has(r.Template) {
			problems = append(problems, fmt.Sprintf("router.routes[%d].template: no email template %q", i, r.Template))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
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
	if err := a.startHTTP(ctx); err != nil {
		return err
	}
	for _, name := range a.cfg.Services {
		svc, err := a.newService(name)
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

func (a *App) newService(name string) (service, error) {
	switch name {
	case "router":
		return router.New(a.js, a.routerC)
	case "delivery":
		return delivery.New(a.js, a.emailC)
	case "pdf":
		return pdf.New(a.js, a.pdfC)
	case "dlq":
		return dlq.New(a.js, a.dlqC)
	}
	return nil, fmt.Errorf("services: %q is not a service", name)
}

func (a *App) connect(ctx context.Context) error {
	a.ncClosed = make(chan struct{})
	nc, err := nats.Connect(a.cfg.NATS.URL,
		nats.Name("herald "+strings.Join(a.cfg.Services, ",")),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				a.logger.Warn("disconnected from NATS; reconnecting", "error", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { a.logger.Info("reconnected to NATS", "url", c.ConnectedUrlRedacted()) }),
		nats.ClosedHandler(func(*nats.Conn) { close(a.ncClosed) }),
	)
	if err != nil {
		return fmt.Errorf("nats: connecting to %s: %w", redact.URL(a.cfg.NATS.URL), redact.Error(err, a.cfg.NATS.URL))
	}
	a.nc = nc
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(notification.AckTimeout))
	if err != nil {
		return err
	}
	// Every bucket and object store the services bind through a.js reports
	// its writes: a store that keeps refusing them fails readiness.
	stores, err := health.NewStores(a.tel.MeterProvider())
	if err != nil {
		return err
	}
	a.js = stores.Watch(js)
	a.checks.Add("stores", stores.Check)
	a.checks.Add("nats", func(context.Context) error {
		if s := nc.Status(); s != nats.CONNECTED {
			return fmt.Errorf("nats connection is %s", s)
		}
		return nil
	})
	a.checks.Add("streams", a.streamsPresent)
	if a.rdb != nil {
		if err := a.rdb.Ping(ctx).Err(); err != nil {
			a.logger.WarnContext(ctx, "redis is not reachable yet; deliveries wait for it", "addr", a.rdb.Options().Addr,
				"error", redact.Error(err, a.cfg.Redis.URL))
		}
		a.checks.Add("redis", func(ctx context.Context) error { return redact.Error(a.rdb.Ping(ctx).Err(), a.cfg.Redis.URL) })
	}
	return nil
}

func (a *App) applyStreams(ctx context.Context) error {
	report, err := streams.Apply(ctx, a.js, a.cfg.StreamOptions())
	if err != nil {
		return fmt.Errorf("applying streams: %w", err)
	}
	for _, r := range report {
		switch {
		case r.Action == streams.Created:
			a.logger.InfoContext(ctx, "created from declaration", "kind", r.Kind, "stream", r.Stream, "name", r.Name)
		case r.Action != streams.Unchanged:
			a.logger.WarnContext(ctx, "server differed from declaration", "kind", r.Kind, "stream", r.Stream, "name", r.Name,
				"action", r.Action, "changes", r.Changes)
		}
	}
	if err := report.Err(); err != nil {
		return fmt.Errorf("the server refused stream declarations; fix the server or the files, then restart:\n%w", err)
	}
	return nil
}

// streamsPresent is ready when every declared stream exists.
func (a *App) streamsPresent(ctx context.Context) error {
	declared, err := streams.Load()
	if err != nil {
		return err
	}
	var existing []string
	names := a.js.StreamNames(ctx)
	for n := range names.Name() {
		existing = append(existing, n)
	}
	if err := names.Err(); err != nil {
		return err
	}
	var missing []string
	for _, s := range declared {
		if !slices.Contains(existing, s.Config.Name) {
			missing = append(missing, s.Config.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("streams missing: %s", strings.Join(missing, ", "))
	}
	return nil
}

// startHTTP opens both listeners: operations (http.listen) for probes and
// scrapers, public (api.listen) for what outsiders reach. They share no
// route, so exposing the public one exposes nothing of operations.
func (a *App) startHTTP(ctx context.Context) error {
	opsLn, err := net.Listen("tcp", a.cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	publicLn, err := net.Listen("tcp", a.cfg.API.Listen)
	if err != nil {
		_ = opsLn.Close()
		return fmt.Errorf("api.listen: %w", err)
	}
	a.opsAddr, a.publicAddr = opsLn.Addr(), publicLn.Addr()
	public := http.NewServeMux()
	if err := a.serveDocuments(ctx, public); err != nil {
		_, _ = opsLn.Close(), publicLn.Close()
		return err
	}
	ops := http.NewServeMux()
	ops.Handle("GET /healthz", health.LiveHandler())
	ops.Handle("GET /readyz", a.checks.ReadyHandler())
	ops.Handle("GET /metrics", a.tel.Handler())
	a.serve("http.listen", opsLn, ops)
	a.serve("api.listen", publicLn, public)
	return nil
}

// The timeouts of both listeners, so that no client holds a connection
// open at will. Nothing served reads a request body yet: reading is
// bounded tight. Writing leaves a large document time to reach a slow
// client. An idle keep-alive connection is closed after a minute.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 2 * time.Minute
	idleTimeout       = time.Minute
)

// serve serves h on ln until Stop shuts the server down.
func (a *App) serve(name string, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	a.servers = append(a.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("http server stopped", "listener", name, "error", err)
		}
	}()
}

// serveDocuments, when links are configured, serves signed document links
// and lets delivery sign them.
func (a *App) serveDocuments(ctx context.Context, mux *http.ServeMux) error {
	if a.linkKey == nil {
		return nil
	}
	public := cmp.Or(a.cfg.Documents.PublicURL, "http://"+a.publicAddr.String())
	signer, err := documents.NewSigner(a.linkKey, public, a.cfg.Documents.LinkTTL)
	if err != nil {
		return fmt.Errorf("documents.public_url: %w", err)
	}
	store, err := documents.Open(ctx, a.js)
	if err != nil {
		return err
	}
	mux.Handle("GET "+documents.LinkPath+"{name...}", documents.Handler(store, signer, a.logger))
	a.emailC.Links = signer
	return nil
}

// HTTPAddr is the operations address: health, readiness, metrics.
func (a *App) HTTPAddr() string { return a.opsAddr.String() }

// APIAddr is the public address: document links.
func (a *App) APIAddr() string { return a.publicAddr.String() }

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
	if a.rdb != nil {
		errs = append(errs, a.rdb.Close())
	}
	errs = append(errs, a.tel.Shutdown(ctx))
	if a.flushTraces != nil {
		errs = append(errs, a.flushTraces(ctx))
	}
	return errors.Join(errs...)
}

// RedisURL is the Redis this process uses, password hidden; "" if none.
func (a *App) RedisURL() string { return redact.URL(a.cfg.Redis.URL) }

// ProviderNames lists the email provider chain, in order.
func (a *App) ProviderNames() []string {
	names := make([]string, len(a.emailC.Providers))
	for i, p := range a.emailC.Providers {
		names[i] = p.Name
	}
	return names
}
