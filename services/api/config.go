package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/telemetry"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// Planner names the notifications the router plans for an event: what
// the API needs of router.Planner.
type Planner interface {
	// Start readies it: it follows the recipient buckets.
	Start(ctx context.Context) error
	Plan(ctx context.Context, header nats.Header, payload []byte) ([]string, error)
	Stop()
}

// Config configures the HTTP API.
type Config struct {
	// MaxBodyBytes caps a request body; a larger one is refused with 413
	// before anything is decoded. Defaults to 1 MiB, NATS's default max
	// payload.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// IdempotencyTTL is how long a request with an Idempotency-Key is
	// answered as it was the first time. It outlasts every stream's
	// duplicate window, and is also the max_age of the bucket
	// "idempotency", which keeps the records. Defaults to 24 hours.
	IdempotencyTTL time.Duration `yaml:"idempotency_ttl"`
	// RedeliveriesPerHour is how many webhooks a tenant's keys may
	// redeliver in a clock hour (UTC), counted across every replica; a
	// redelivery past it is refused whole with 429. Admin keys are not
	// held. Defaults to 5000.
	RedeliveriesPerHour int64 `yaml:"redeliveries_per_hour"`

	// AttachMaxBytes is the largest stored document a notification may
	// attach (documents.attach_max_bytes, as the delivery workers read
	// it); a larger one is refused with 422. Defaults to 5 MiB.
	AttachMaxBytes int64 `yaml:"-"`

	// Authenticator turns an API key into a Principal. Required (New
	// checks it; Validate checks what the YAML file sets).
	Authenticator Authenticator `yaml:"-"`
	// Plans are the plans a tenant may be on (the config file's plans:,
	// over the built-in ones). Defaults to tenant.BuiltinPlans.
	Plans tenant.Plans `yaml:"-"`
	// Registry says which plan a tenant is on (tenant.Cache), and Limiter
	// holds its intake to the plan's rate. Either nil: no intake limit.
	Registry PlanOf  `yaml:"-"`
	Limiter  Limiter `yaml:"-"`
	// Keyring seals and opens provider credentials. Nil: the provider
	// routes answer 503, no master key configured. Defaults to nil.
	Keyring *vault.Keyring `yaml:"-"`
	// History is the notification index (history.Store) listings are
	// answered from, and where a notification no worker claimed yet is
	// found, pending. Nil: GET /v1/notifications answers 503, and a
	// notification is known once the ledger has it. Defaults to nil.
	History History `yaml:"-"`
	// Erasure is what erasing a subscriber (DELETE /v1/subscribers/{id}
	// ?erase=true) needs: the link secret its keyed hashes derive from,
	// and the notification index it redacts (nil without one: the ledger
	// is read instead). Without a secret, an erasure answers 503. Defaults
	// to none.
	Erasure erasure.Config `yaml:"-"`
	// Templates renders tenants' own email templates for a sample
	// delivery (email.Composer): a template is checked so before it is
	// stored, and previewed. Without it, the template routes answer 503.
	Templates TemplateRenderer `yaml:"-"`
	// Workflows are what tenants' own workflows are checked against
	// beyond their validation: the deployment's channels, templates and
	// steps. Defaults to none: a workflow that validates is stored.
	Workflows WorkflowChecks `yaml:"-"`
	// Domains finds the email provider that registers a tenant's sending
	// domains, and its name: the first of the tenant's email chain that
	// registers domains (ses, sendgrid), or domains.ErrNoRegistrar. Nil:
	// adding or checking a domain answers 503; listing and forgetting
	// work. Defaults to nil.
	Domains func(ctx context.Context, tenant string) (string, domains.Registrar, error) `yaml:"-"`
	// Planner names the notifications the router plans for an event
	// (router.Planner, with the routes the router has): POST /v1/events
	// answers with their ids. The service starts and stops it with its
	// own. Nil: the answer names none. Defaults to nil.
	Planner Planner `yaml:"-"`
	// Categories are the categories the routes name (router.Categories),
	// each required when a route marks it so: what preferences show, and
	// which of them nobody may switch off. Defaults to none.
	Categories []recipient.Category `yaml:"-"`
	// AllowPrivateNetworks lets a Web Push device's endpoint resolve to a
	// loopback, private, link-local or metadata address — for development
	// only, as webhooks.allow_private_networks is (herald dev sets it).
	// Defaults to false: such an endpoint is refused (422) when stored.
	AllowPrivateNetworks bool `yaml:"-"`
	// MaxTopicMembers caps a topic's members: an addition past it is
	// refused whole. Defaults to 100,000, twice the 50,000 a topic's
	// fan-out is measured at, and few enough that listing a topic's keys
	// (a page of members, this check, its removal) stays one filter of a
	// few megabytes.
	MaxTopicMembers int `yaml:"-"`
	// InboxTokens mints and verifies subscribers' inbox tokens
	// (inbox.NewTokens from the deployment's inbox token secret). Nil: the
	// inbox routes answer 503 and the API follows no feed. Defaults to nil.
	InboxTokens *inbox.Tokens `yaml:"-"`
	// DocumentLinks signs the document_url of inbox items, afresh at each
	// listing since items outlive links (documents.NewSigner, as emails'
	// links are signed). Nil: items carry no document_url. Defaults to nil.
	DocumentLinks *documents.Signer `yaml:"-"`
	// VAPIDPublicKey is the Web Push public key browsers subscribe with
	// (push.webpush.vapid_public_key). Empty: GET
	// /v1/inbox/vapid-public-key answers 404. Defaults to empty.
	VAPIDPublicKey string `yaml:"-"`
	// InboxStreams caps the inbox streams (SSE) one API process holds
	// open; one more is refused with 503 and Retry-After. Defaults to
	// 20,000.
	InboxStreams int `yaml:"-"`
	// InboxStreamsPerSubscriber caps one subscriber's open streams (its
	// tabs and devices); one more is refused with 429. Defaults to 10.
	InboxStreamsPerSubscriber int `yaml:"-"`
	// InboxStreamBuffer is how many changes wait for one stream; a
	// stream that falls further behind is closed (the browser resumes
	// with Last-Event-ID) so that it never holds the others up. Defaults
	// to 64.
	InboxStreamBuffer int `yaml:"-"`
	// InboxHeartbeat is how often an idle stream sends a comment, so
	// proxies do not close it. Defaults to 25 seconds, under the 30 to 60
	// seconds proxies commonly allow.
	InboxHeartbeat time.Duration `yaml:"-"`
	// TracerProvider, when set, traces every request as a server span
	// whose context travels on with what the request publishes; nil
	// traces nothing.
	TracerProvider trace.TracerProvider `yaml:"-"`
	// Logger defaults to discarding.
	Logger *slog.Logger `yaml:"-"`
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider `yaml:"-"`
	// Tenants bounds the tenant label of metrics; one is shared by every
	// service of a process (metrics.max_tenants). Defaults to
	// telemetry.DefaultMaxTenants tenants.
	Tenants *telemetry.Labels `yaml:"-"`
}

// WithDefaults returns the config with every unset field filled in.
func (c Config) WithDefaults() Config {
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, 1<<20)
	c.IdempotencyTTL = cmp.Or(c.IdempotencyTTL, 24*time.Hour)
	c.RedeliveriesPerHour = cmp.Or(c.RedeliveriesPerHour, 5000)
	c.AttachMaxBytes = cmp.Or(c.AttachMaxBytes, documents.DefaultAttachMaxBytes)
	c.MaxTopicMembers = cmp.Or(c.MaxTopicMembers, 100_000)
	c.InboxStreams = cmp.Or(c.InboxStreams, 20_000)
	c.InboxStreamsPerSubscriber = cmp.Or(c.InboxStreamsPerSubscriber, 10)
	c.InboxStreamBuffer = cmp.Or(c.InboxStreamBuffer, 64)
	c.InboxHeartbeat = cmp.Or(c.InboxHeartbeat, 25*time.Second)
	c.Plans = c.Plans.WithDefaults()
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
// field as it appears in the YAML file (under api:).
func (c Config) Validate() error {
	var problems []string
	if c.MaxBodyBytes < 1 {
		problems = append(problems, fmt.Sprintf("api.max_body_bytes: must be 1 or more (got %d)", c.MaxBodyBytes))
	}
	if c.IdempotencyTTL < time.Minute {
		problems = append(problems, fmt.Sprintf("api.idempotency_ttl: must be at least 1m, longer than a request takes (got %s)", c.IdempotencyTTL))
	}
	if c.RedeliveriesPerHour < 1 {
		problems = append(problems, fmt.Sprintf("api.redeliveries_per_hour: must be 1 or more (got %d)", c.RedeliveriesPerHour))
	}
	if err := c.Plans.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}
