package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/services/delivery/apptext"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/dlq/alert"
	"github.com/heraldhq/herald/services/pdf"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/ordering"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/ratelimit"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// module is one service the binary can run — one row of modules. answers
// says whom it answers over HTTP. configure builds the service's config
// from its section of the file and checks it, before anything connects:
// every bad setting of every service a process runs stops start-up at
// once. build makes the service once NATS is up.
type module struct {
	name      string
	answers   audience
	configure func(*App) error
	build     func(*App, context.Context) (service, error)
}

// audience is whom a service answers over HTTP, and so which listeners a
// process running it opens.
type audience int

const (
	// operators: probes and scrapers, on the operations listener
	// (http.listen) every process opens.
	operators audience = iota
	// outsiders as well, on the public listener (api.listen): the HTTP
	// API, the document and unsubscribe links under /v1, the providers'
	// webhooks and the console. A process opens it only for such a service.
	outsiders
)

// modules are the services, one row each.
var modules = []module{
	{"router", operators, (*App).configureRouter, (*App).buildRouter},
	{"workflow", operators, (*App).configureWorkflow, func(a *App, _ context.Context) (service, error) { return workflow.New(a.js, a.workflowC) }},
	{"pdf", operators, (*App).configurePDF, func(a *App, _ context.Context) (service, error) { return pdf.New(a.js, a.pdfC) }},
	{"delivery", operators, (*App).configureDelivery, (*App).buildDelivery},
	{"sms", operators, configureText(event.ChannelSMS), buildText(event.ChannelSMS)},
	{"whatsapp", operators, configureText(event.ChannelWhatsApp), buildText(event.ChannelWhatsApp)},
	{"webhook", operators, (*App).configureWebhook, (*App).buildWebhook},
	{"push", operators, (*App).configurePush, (*App).buildPush},
	{"inbox", operators, (*App).configureInbox, (*App).buildInbox},
	{"dlq", operators, (*App).configureDLQ, func(a *App, _ context.Context) (service, error) { return dlq.New(a.js, a.dlqC) }},
	{"api", outsiders, (*App).configureAPI, (*App).buildAPI},
	{"history", operators, (*App).configureHistory, (*App).buildHistory},
	{"outbox-relay", operators, (*App).configureOutbox, (*App).buildOutbox},
}

// Targets are the services one herald process can run.
var Targets = func() []string {
	names := make([]string, len(modules))
	for i, m := range modules {
		names[i] = m.name
	}
	return names
}()

// ServesOutsiders says whether a process running services opens the public
// listener (api.listen): only when one of them answers outsiders. A
// process of workers alone listens for probes and scrapers only.
func ServesOutsiders(services []string) bool {
	return slices.ContainsFunc(services, func(name string) bool {
		m, ok := moduleNamed(name)
		return ok && m.answers == outsiders
	})
}

func moduleNamed(name string) (module, bool) {
	i := slices.IndexFunc(modules, func(m module) bool { return m.name == name })
	if i < 0 {
		return module{}, false
	}
	return modules[i], true
}

// configureRouter reads router:, and refuses routes that would publish
// emails no template can render: better a start-up error than a dead
// letter per recipient.
func (a *App) configureRouter() error {
	c := a.routes()
	c.Logger = a.logger.With("service", "router")
	c.MeterProvider, c.Tenants, c.TracerProvider = a.tel.MeterProvider(), a.tenants, a.tracer
	a.routerC = c.WithDefaults()
	return errors.Join(a.routerC.Validate(), checkTemplates(a.routerC))
}

// routes is router: as the router reads it, with the channels this
// deployment has providers for when it names none: others' recipients are
// skipped, and counted. The api plans with it too.
func (a *App) routes() router.Config {
	c := a.cfg.Router
	if c.Channels == nil {
		c.Channels = []event.Channel{event.ChannelEmail, event.ChannelWebhook}
		if len(a.cfg.SMS.Providers) > 0 {
			c.Channels = append(c.Channels, event.ChannelSMS)
		}
		if len(a.cfg.WhatsApp.Providers) > 0 {
			c.Channels = append(c.Channels, event.ChannelWhatsApp)
		}
		if a.cfg.Push.Configured() {
			c.Channels = append(c.Channels, event.ChannelPush)
		}
		if a.cfg.Inbox.On() {
			c.Channels = append(c.Channels, event.ChannelInbox)
		}
	}
	return c
}

// buildRouter admits each event's tenant through the registry.
func (a *App) buildRouter(ctx context.Context) (service, error) {
	registry, err := a.tenantCache(ctx)
	if err != nil {
		return nil, err
	}
	a.routerC.Registry, a.routerC.RequireRegistered, a.routerC.Plans = registry, *a.cfg.Tenants.RequireRegistered, a.cfg.Plans
	// Ordered routes register their revisions where the workers hold them.
	if a.rdb != nil {
		a.routerC.Sequences = ordering.New(a.rdb, a.cfg.Redis.Prefix)
	} else {
		a.logger.Warn("no redis configured: routes' ordered option has no effect in this router")
	}
	return router.New(a.js, a.routerC)
}

// shippedTemplates says, per channel that renders templates, whether
// Herald ships one of a name.
func shippedTemplates() (map[event.Channel]func(string) bool, error) {
	mail, err := email.NewComposer("check <check@example.com>")
	if err != nil {
		return nil, err
	}
	text, err := sms.NewComposer()
	if err != nil {
		return nil, err
	}
	inApp, err := apptext.New()
	if err != nil {
		return nil, err
	}
	return map[event.Channel]func(string) bool{event.ChannelEmail: mail.Has, event.ChannelSMS: text.Has, event.ChannelWhatsApp: text.Has,
		event.ChannelPush: inApp.Has, event.ChannelInbox: inApp.Has}, nil
}

func checkTemplates(c router.Config) error {
	has, err := shippedTemplates()
	if err != nil {
		return err
	}
	var problems []string
	for i, r := range c.Routes {
		if len(r.Steps) == 0 {
			problems = append(problems, missingTemplates(has, c.Channels, r, fmt.Sprintf("router.routes[%d].template", i))...)
		}
		// With steps, the route's template and channels are only the send
		// steps' defaults: each send is checked as it will plan.
		for j, step := range r.Steps {
			if step.Send != nil {
				field := fmt.Sprintf("router.routes[%d].steps[%d].send.template", i, j)
				problems = append(problems, missingTemplates(has, c.Channels, r.SendStepRoute(j), field)...)
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// missingTemplates names, under field, each of the deployment's channels
// route r sends on whose composer has no template r.Template.
func missingTemplates(has map[event.Channel]func(string) bool, deployed []event.Channel, r router.Route, field string) []string {
	var problems []string
	for _, ch := range slices.Concat(r.Channels, r.Fallback) {
		if found, ok := has[ch]; ok && slices.Contains(deployed, ch) && !found(r.Template) {
			problems = append(problems, fmt.Sprintf("%s: no %s template %q", field, ch, r.Template))
		}
	}
	return problems
}

// configureWorkflow reads workflow:.
func (a *App) configureWorkflow() error {
	c := a.cfg.Workflow
	c.Logger = a.logger.With("service", "workflow")
	c.MeterProvider, c.Tenants, c.TracerProvider = a.tel.MeterProvider(), a.tenants, a.tracer
	a.workflowC = c.WithDefaults()
	return a.workflowC.Validate()
}

// configurePDF reads pdf:.
func (a *App) configurePDF() error {
	a.pdfC = pdf.Config{Concurrency: a.cfg.PDF.Concurrency, Fair: a.cfg.FairScheduling(), Logger: a.logger.With("service", "pdf"),
		MeterProvider: a.tel.MeterProvider(), Tenants: a.tenants, TracerProvider: a.tracer}.WithDefaults()
	if a.rdb != nil { // a render given up releases the order's revisions parked behind it
		a.pdfC.Sequences = ordering.New(a.rdb, a.cfg.Redis.Prefix)
	}
	return a.pdfC.Validate()
}

// configureDelivery reads email: and builds the provider chain.
func (a *App) configureDelivery() error {
	e := a.cfg.Email
	providers, err := a.buildProviders(context.Background())
	if err != nil {
		return err
	}
	a.emailA = email.ChannelConfig{From: e.From, Providers: providers, AttachMaxBytes: a.cfg.Documents.AttachMaxBytes,
		Logger: a.logger.With("service", "delivery")}
	ch, err := email.NewChannel(a.emailA)
	if err != nil {
		return err
	}
	// Without a master key, tenants' own accounts cannot be opened: a
	// tenant naming one is dead-lettered, saying so.
	if err := a.loadKeyring(); err != nil {
		return err
	}
	a.emailC = a.deliveryConfig(ch, "email", e.DeliveryConfig, names(providers))
	return a.emailC.Validate()
}

// deliveryConfig is the protocol's config for one channel's adapter, set
// in section of the file (the name its errors give the fields).
func (a *App) deliveryConfig(ch delivery.Channel, section string, d DeliveryConfig, platform []string) delivery.Config {
	c := delivery.Config{
		Channel: ch, Section: section, Concurrency: d.Concurrency, ProviderTimeout: d.Timeout, LockTTL: d.LockTTL, RetryDelay: d.RetryDelay,
		MaxTries: d.MaxTries, Platform: platform,
		BreakerFailures: a.cfg.Breakers.Failures, BreakerCooldown: a.cfg.Breakers.Cooldown, Circuits: a.noteCircuit,
		Logger: a.logger.With("service", "delivery", "channel", string(ch.Name())), MeterProvider: a.tel.MeterProvider(),
		Tenants: a.tenants, TracerProvider: a.tracer, Fair: a.cfg.FairScheduling(), Weights: a.cfg.Scheduling.Weights,
	}
	if a.rdb != nil {
		c.Locker = lock.NewRedis(a.rdb, a.cfg.Redis.Prefix+"lock:")
		c.Sequences = ordering.New(a.rdb, a.cfg.Redis.Prefix)
	}
	return c.WithDefaults()
}

// quotas count every tenant's notifications against its plan's monthly
// quota, as the registry names the plan.
func (a *App) quotas(registry *tenant.Cache) delivery.Quotas {
	return quota.Plans{Tenants: registry, Plans: a.cfg.Plans}
}

// rates hold every tenant's sends to its plan's rate, with fair
// scheduling and Redis; nil otherwise.
func (a *App) rates(registry *tenant.Cache) *delivery.Rates {
	if !a.cfg.FairScheduling() || a.rdb == nil {
		return nil
	}
	return &delivery.Rates{Limiter: ratelimit.New(a.rdb, a.cfg.Redis.Prefix), Rate: func(id string) (ratelimit.Limit, bool) {
		_, plan := registry.Plan(id, a.cfg.Plans)
		perMinute, burst, limited := plan.Rate()
		return ratelimit.Limit{PerMinute: perMinute, Burst: burst}, limited
	}}
}

// deliveryService runs the delivery protocol with c on ch, its tenants
// checked through registry: suspension, plan rate, monthly quota, and the
// shared circuit breakers.
func (a *App) deliveryService(ctx context.Context, c delivery.Config, ch delivery.Channel, registry *tenant.Cache) (*delivery.Service, error) {
	c.Channel, c.Registry, c.Quotas, c.Rates = ch, registry, a.quotas(registry), a.rates(registry)
	c.TenantWeight = func(id string) int { return registry.Weight(id, a.cfg.Plans) } // from memory: no round trip a pull
	if err := a.openCircuits(ctx); err != nil {
		return nil, err
	}
	return delivery.New(a.js, c)
}

// names are the providers' names, in order.
func names[P any](providers []delivery.Named[P]) []string {
	out := make([]string, len(providers))
	for i, p := range providers {
		out[i] = p.Name
	}
	return out
}

// accounts opens the tenants' own provider accounts; nil without a master
// key, when no tenant can have any.
func (a *App) accounts(ctx context.Context) (delivery.Accounts, error) {
	if a.keyring == nil {
		return nil, nil
	}
	store, err := vault.Open(ctx, a.js, a.keyring)
	if err != nil {
		return nil, err
	}
	return store, nil
}

// configureText reads sms: or whatsapp: and builds its provider chain.
func configureText(channel event.Channel) func(*App) error {
	return func(a *App) error {
		section, templates := a.cfg.SMS, sms.Templates(nil)
		if channel == event.ChannelWhatsApp {
			section, templates = a.cfg.WhatsApp.TextConfig, a.cfg.WhatsApp.Templates
		}
		providers, err := a.buildTextProviders(context.Background(), channel, section.Providers)
		if err != nil {
			return err
		}
		adapter := sms.ChannelConfig{Channel: channel, Providers: providers, Templates: templates}
		ch, err := sms.NewChannel(adapter)
		if err != nil {
			return err
		}
		c := a.deliveryConfig(ch, string(channel), section.DeliveryConfig, names(providers))
		if a.textC == nil {
			a.textC, a.textA = map[event.Channel]delivery.Config{}, map[event.Channel]sms.ChannelConfig{}
		}
		a.textC[channel], a.textA[channel] = c, adapter
		return c.Validate()
	}
}

// buildText refuses a suspended tenant's text messages.
func buildText(channel event.Channel) func(*App, context.Context) (service, error) {
	return func(a *App, ctx context.Context) (service, error) {
		registry, err := a.tenantCache(ctx)
		if err != nil {
			return nil, err
		}
		accounts, err := a.accounts(ctx)
		if err != nil {
			return nil, err
		}
		adapter := a.textA[channel]
		adapter.Chains = &delivery.TenantChains[sms.Provider]{Channel: channel, Tenants: registry,
			Platform: adapter.Providers, Accounts: accounts, Build: a.buildTextAccount}
		ch, err := sms.NewChannel(adapter)
		if err != nil {
			return nil, err
		}
		return a.deliveryService(ctx, a.textC[channel], ch, registry)
	}
}

// buildDelivery refuses a suspended tenant's notifications.
func (a *App) buildDelivery(ctx context.Context) (service, error) {
	registry, err := a.tenantCache(ctx)
	if err != nil {
		return nil, err
	}
	accounts, err := a.accounts(ctx)
	if err != nil {
		return nil, err
	}
	a.emailA.Routes = email.NewTenantRoutes(registry, a.emailA.Providers, accounts, buildAccount)
	ch, err := email.NewChannel(a.emailA)
	if err != nil {
		return nil, err
	}
	return a.deliveryService(ctx, a.emailC, ch, registry)
}

// configureDLQ reads dlq: — alerts and the resend sweep.
func (a *App) configureDLQ() error {
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
			return err
		}
		c.Alerts = append(c.Alerts, &alert.Slack{URL: u})
	}
	if al.WebhookURLEnv != "" || al.WebhookURLFile != "" {
		u, err := a.secret("dlq.alerts.webhook_url_env", al.WebhookURLEnv, al.WebhookURLFile)
		if err != nil {
			return err
		}
		c.Alerts = append(c.Alerts, &alert.Webhook{URL: u})
	}
	a.dlqC = c.WithDefaults()
	return a.dlqC.Validate()
}

// loadKeyring loads the vault's master key (and the keys of a rotation)
// once, for every service that opens tenants' provider accounts; without
// one, the keyring stays nil.
func (a *App) loadKeyring() error {
	if a.keyring != nil {
		return nil
	}
	keyring, err := vault.LoadKeyring(a.cfg.Vault, a.getenv)
	if err != nil && !errors.Is(err, vault.ErrNoKey) {
		return err
	}
	a.keyring = keyring
	return nil
}
