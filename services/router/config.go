package router

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/telemetry"
	"github.com/heraldhq/herald/shared/tenant"
)

// Config configures the router.
type Config struct {
	// Routes decide who hears about which event. Setting them replaces the
	// built-in routes entirely. Defaults to the built-in routes
	// (docs/ARCHITECTURE.md, "Default routes").
	Routes []Route `yaml:"routes"`
	// Channels are the channels this deployment delivers on; deliveries for
	// other channels are not published (and are counted as skipped), so no
	// message waits for a worker that does not exist. Defaults to email
	// and webhook, and sms and whatsapp when their providers are configured
	// (herald decides it, the router package alone defaults to email).
	Channels []event.Channel `yaml:"channels"`
	// Concurrency is how many events are routed at once. Defaults to 4.
	Concurrency int `yaml:"concurrency"`
	// MaxRecipients caps the recipients one event may list; an event with
	// more is invalid and dead-lettered, naming this limit. A business
	// document goes to a handful of contacts: 500 leaves ample room, keeps
	// the deliveries waiting for one document (~800 bytes each) within a
	// single render request at NATS's default 1 MiB max payload, and stops
	// a publisher's mistake (a mailing list pasted into an order) from
	// becoming thousands of emails. Defaults to 500.
	MaxRecipients int `yaml:"max_recipients"`
	// FanoutPage is how many of a topic's members are planned at once. A
	// topic with more is not planned with its event: it is fanned out a
	// page at a time on the FANOUT stream, tenants in turn, so that a
	// topic of 50,000 never holds the router. Defaults to 1000.
	FanoutPage int `yaml:"fanout_page"`

	// Sequences register each revision an ordered route publishes before
	// it is published (ordering.Redis), so that a worker can hold a later
	// revision until this one is settled. Defaults to none: routes'
	// ordered option has no effect (herald sets it whenever Redis is
	// configured).
	Sequences Sequences `yaml:"-"`

	// Registry admits each event's tenant before it is routed; a refused
	// event is dead-lettered with the registry's reason. Defaults to none:
	// every tenant is routed.
	Registry Tenants `yaml:"-"`
	// RequireRegistered refuses the events of tenants the registry does not
	// know (`unknown tenant "x"`); it needs Registry. Set from
	// tenants.require_registered. Defaults to false.
	RequireRegistered bool `yaml:"-"`
	// Plans are what tenants' plans allow (the config file's plans: over
	// the built-in ones): a tenant's deliveries are capped at its plan's
	// max_priority. Needs Registry.
	Plans tenant.Plans `yaml:"-"`

	// Recipients resolve the subscribers, accounts and topics events name.
	// The service sets its own, fed by watches of the recipient buckets,
	// when it starts; a Config without one (Plan's, a test's) resolves
	// every reference to nobody.
	Recipients Directory `yaml:"-"`
	// Workflows are tenants' own workflows (KV_workflows): a tenant's
	// workflow replaces, for that tenant's events of its type (and kind),
	// the configured routes. The service follows the bucket itself when
	// it starts; a Config without them (Plan's, a test's) routes every
	// tenant by Routes.
	Workflows TenantWorkflows `yaml:"-"`

	// Logger defaults to discarding.
	Logger *slog.Logger `yaml:"-"`
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider `yaml:"-"`
	// Tenants bounds the tenant label of metrics; one is shared by every
	// service of a process (metrics.max_tenants). Defaults to
	// telemetry.DefaultMaxTenants tenants.
	Tenants *telemetry.Labels `yaml:"-"`
	// TracerProvider, when set, traces every message handled; nil traces
	// nothing.
	TracerProvider trace.TracerProvider `yaml:"-"`
}

// WithDefaults returns the config with every unset field filled in.
func (c Config) WithDefaults() Config {
	if c.Routes == nil {
		c.Routes = DefaultRoutes()
	}
	routes := make([]Route, len(c.Routes))
	for i, r := range c.Routes {
		routes[i] = r.withDefaults()
	}
	c.Routes = routes
	if c.Channels == nil {
		c.Channels = []event.Channel{event.ChannelEmail}
	}
	c.Concurrency = cmp.Or(c.Concurrency, 4)
	c.MaxRecipients = cmp.Or(c.MaxRecipients, 500)
	c.FanoutPage = cmp.Or(c.FanoutPage, 1000)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	if c.Tenants == nil {
		c.Tenants = telemetry.NewTenantLabels(telemetry.DefaultMaxTenants)
	}
	return c
}

// Validate reports every problem with a defaulted config, each naming its
// field as it appears in the YAML file (under router:).
func (c Config) Validate() error {
	var problems []string
	if len(c.Routes) == 0 {
		problems = append(problems, "router.routes: at least one route is required")
	}
	for i, r := range c.Routes {
		problems = append(problems, r.validate(fmt.Sprintf("router.routes[%d]", i))...)
	}
	for _, ch := range c.Channels {
		if !slices.Contains(event.Channels, ch) {
			problems = append(problems, fmt.Sprintf("router.channels: %q is not a channel (want some of %v)", ch, event.Channels))
		}
	}
	if c.Concurrency < 1 {
		problems = append(problems, fmt.Sprintf("router.concurrency: must be 1 or more (got %d)", c.Concurrency))
	}
	if c.MaxRecipients < 1 {
		problems = append(problems, fmt.Sprintf("router.max_recipients: must be 1 or more (got %d)", c.MaxRecipients))
	}
	if c.FanoutPage < 1 {
		problems = append(problems, fmt.Sprintf("router.fanout_page: must be 1 or more (got %d)", c.FanoutPage))
	}
	if c.RequireRegistered && c.Registry == nil {
		problems = append(problems, "tenants.require_registered: set, but the router was given no tenant registry to check it against")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}
