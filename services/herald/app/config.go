package app

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/redisconn"
	"github.com/heraldhq/herald/shared/telemetry"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/streams"
)

// Config is Herald's configuration file (HERALD_CONFIG or --config); the
// same file serves `herald dev` and production. Environment variables and
// flags override it in main.
type Config struct {
	// NATS is the server whose streams, key-value buckets and object
	// store carry every event, delivery and document.
	NATS struct {
		// URL of the NATS server. Defaults to nats://127.0.0.1:4222.
		URL string `yaml:"url"`
	} `yaml:"nats"`
	// Redis holds what replicas share beside NATS: the leases on
	// notifications being sent, and the rate limits of tenants' plans and
	// of the HTTP intake.
	Redis struct {
		// URL of Redis. Required by the delivery services. One server:
		// redis://[:password@]host:port[/db], rediss:// for TLS, or
		// unix://; a master watched by Sentinel:
		// redis+sentinel://[:password@]s1:26379,s2:26379/mymaster[/db];
		// a Redis Cluster: redis+cluster://[:password@]n1:6379,n2:6379.
		URL string `yaml:"url"`
		// ClusterAddrs lists a Redis Cluster's nodes, as managed services
		// give them: the same as url redis+cluster://n1:6379,n2:6379 (which
		// can also carry a password). Give one or the other.
		ClusterAddrs []string `yaml:"cluster_addrs"`
		// TLS are the files a rediss:// server may need: ca_file (a CA no
		// system root has), cert_file and key_file (a client certificate).
		// Defaults to none: the system's roots, no client certificate.
		TLS redisconn.TLS `yaml:"tls"`
		// Prefix of every key Herald writes, so deployments can share one
		// Redis. Defaults to "herald:".
		Prefix string `yaml:"prefix"`
	} `yaml:"redis"`
	// HTTP is the operations address every process opens.
	HTTP struct {
		// Listen is the operations address: /healthz, /readyz and
		// /metrics, for probes and scrapers, never for the internet (the
		// metrics name tenants, readiness names internal addresses).
		// Defaults to 127.0.0.1:8080.
		Listen string `yaml:"listen"`
	} `yaml:"http"`
	// API is the public HTTP server the api service opens.
	API struct {
		// Listen is the public address: what recipients and outsiders
		// reach — the API, signed document and unsubscribe links, the
		// providers' webhooks and the console — opened only by a process
		// that runs the api. It serves nothing of the operations address.
		// Defaults to 127.0.0.1:8081.
		Listen string `yaml:"listen"`
		// MaxBodyBytes caps a request body (413 beyond). Defaults to 1 MiB.
		MaxBodyBytes int64 `yaml:"max_body_bytes"`
		// IdempotencyTTL is how long a request with an Idempotency-Key is
		// answered as the first was; it is the max_age of the bucket
		// idempotency. Defaults to 24 hours.
		IdempotencyTTL time.Duration `yaml:"idempotency_ttl"`
		// RedeliveriesPerHour is how many webhooks a tenant's keys may
		// redeliver an hour, across replicas. Defaults to 5000.
		RedeliveriesPerHour int64 `yaml:"redeliveries_per_hour"`
	} `yaml:"api"`
	// Breakers are the circuit breakers in front of each provider (and
	// each tenant's own account or webhook endpoint).
	Breakers struct {
		// Failures is how many transient failures in a row open a
		// provider's circuit: it is skipped, not called, and the chain
		// moves on, until Cooldown has passed and a probe succeeds.
		// Defaults to 5; -1 turns the breakers off.
		Failures int `yaml:"failures"`
		// Cooldown is how long an open circuit skips its provider before
		// one call probes it. Defaults to 30s.
		Cooldown time.Duration `yaml:"cooldown"`
	} `yaml:"breakers"`
	// Streams adjusts the JetStream streams, buckets and object store
	// Herald declares (streams/*.json) to the NATS deployment.
	Streams struct {
		// Replicas overrides num_replicas of every stream (3 on a cluster).
		// Defaults to the declared value.
		Replicas int `yaml:"replicas"`
		// Skip applying the stream declarations at start-up (when a Helm
		// hook runs `herald streams apply` instead). Defaults to false.
		SkipApply bool `yaml:"skip_apply"`
	} `yaml:"streams"`
	// Log is what each process writes to its standard error.
	Log struct {
		// Level is debug, info, warn or error. Defaults to info.
		Level string `yaml:"level"`
		// Format is text or json. Defaults to text.
		Format string `yaml:"format"`
	} `yaml:"log"`
	// Metrics are the Prometheus metrics served at /metrics.
	Metrics struct {
		// MaxTenants is how many distinct tenants label the metrics of one
		// process; later tenants are counted together as "other", so
		// publishers cannot create time series without bound. Defaults
		// to 100.
		MaxTenants int `yaml:"max_tenants"`
	} `yaml:"metrics"`
	// Router decides who hears about each event, on which channels, and
	// with which document.
	Router router.Config `yaml:"router"`
	// Workflow takes the runs of routes with steps: their sends, waits
	// and ends (docs/workflows.md).
	Workflow workflow.Config `yaml:"workflow"`
	// Email is the email channel: its sender, workers and providers.
	Email EmailConfig `yaml:"email"`
	// SMS is the sms channel, which runs when it has providers.
	SMS TextConfig `yaml:"sms"`
	// WhatsApp is the whatsapp channel, which runs when it has providers,
	// and its approved templates.
	WhatsApp WhatsAppConfig `yaml:"whatsapp"`
	// Webhooks are signed POSTs to the endpoints tenants register: their
	// notifications' status events, or a channel of routes.
	Webhooks WebhooksConfig `yaml:"webhooks"`
	// Push is the push channel: the subscribers' registered devices,
	// through FCM, APNs and Web Push.
	Push PushConfig `yaml:"push"`
	// Inbox is the inbox channel: each subscriber's in-app feed.
	Inbox InboxConfig `yaml:"inbox"`
	// PDF is the service that renders business documents.
	PDF struct {
		// Concurrency is how many documents are rendered at once (CPU-bound).
		// Defaults to 2.
		Concurrency int `yaml:"concurrency"`
	} `yaml:"pdf"`
	// Documents says how rendered documents reach recipients: attached,
	// or as a signed link.
	Documents DocumentsConfig `yaml:"documents"`
	// Inbound verifies the delivery reports the platform's provider
	// accounts post to the api.
	Inbound InboundConfig `yaml:"inbound"`
	// DLQ is the dead-letter service: its alerts and its resend sweep.
	DLQ DLQConfig `yaml:"dlq"`
	// Ledger is the record of every delivery, which keeps a notification
	// from being sent twice.
	Ledger struct {
		// Retention is how long the delivery ledger remembers a
		// notification after its last write — and so how late a copy of it
		// is still recognised and not sent again. It must outlast the
		// longest way a copy can come back: 51 days with the declared
		// streams (docs/deploying.md, "Streams": why 90 days). Defaults to 90 days.
		Retention time.Duration `yaml:"retention"`
	} `yaml:"ledger"`

	// History is the SQL index of notifications the api lists from,
	// which the history service fills.
	History struct {
		// URL of the notification index GET /v1/notifications lists
		// from: postgres://user:password@host/db for any number of
		// replicas, or sqlite:PATH for one process (herald dev uses
		// sqlite:.herald/history.db). HISTORY_URL overrides it. Required
		// by the history service; without it the api answers listings
		// with 503, and reads notifications from the ledger alone.
		URL string `yaml:"url"`
	} `yaml:"history"`

	// Outbox is the transactional outbox the outbox-relay service
	// publishes from (docs/publishing.md, "Through a transactional outbox").
	Outbox struct {
		// URL of the database holding herald_outbox: postgres://… or
		// sqlite:PATH. OUTBOX_URL overrides it. Required by the
		// outbox-relay service, which runs only when it is set or named.
		URL string `yaml:"url"`
		// Batch is how many rows one transaction publishes. Defaults to 500.
		Batch int `yaml:"batch"`
		// Poll is how long the relay waits for a notification before it
		// looks anyway; SQLite, which has none, waits this long whenever
		// it finds nothing. Defaults to 1s on PostgreSQL, 100ms on SQLite.
		Poll time.Duration `yaml:"poll"`
		// Retention is how long published rows are kept. Defaults to 24h.
		Retention time.Duration `yaml:"retention"`
	} `yaml:"outbox"`

	// Scheduling is how deliveries are taken from NOTIFY.
	Scheduling struct {
		// Fair serves tenants in turn: each tenant with a backlog gets a
		// consumer of its own, and the workers take one delivery at a
		// time from the next tenant, so one tenant's burst does not delay
		// another's single order; with Redis, it also holds each tenant's
		// sends to its plan's rate. False: one consumer per channel and
		// priority takes deliveries first come, first served, and only
		// the HTTP intake is rate limited. Defaults to true.
		Fair *bool `yaml:"fair"`
		// Weights share the workers between priorities while all have a
		// backlog. Defaults to critical 6, normal 3, low 1.
		Weights map[notification.Priority]int `yaml:"weights"`
	} `yaml:"scheduling"`

	// Tenants says how events of tenants the registry does not know are
	// treated.
	Tenants struct {
		// RequireRegistered dead-letters the events of a tenant the
		// registry (`herald tenants`) does not know, with the reason
		// `unknown tenant "x"`. Off, such events are routed as before
		// tenants were registered. Defaults to true.
		RequireRegistered *bool `yaml:"require_registered"`
	} `yaml:"tenants"`
	// Plans are the plans tenants may be on, by name: entries add to or
	// change the built-in free, indie, startup and enterprise (a field left
	// empty keeps the built-in value). Defaults to the built-in plans.
	Plans tenant.Plans `yaml:"plans"`
	// Vault says where the master key that seals tenants' provider
	// credentials is.
	Vault vault.Config `yaml:"vault"`

	// Services are the targets this process runs. Set by the command line.
	Services []string `yaml:"-"`
	// Getenv reads the environment variables the file names (secrets),
	// and the OTEL_* variables. Set by main; nil reads nothing.
	Getenv func(string) string `yaml:"-"`
	// TracerProvider traces every service, when set; else the OTEL_*
	// variables decide (see telemetry.TracingEnabled).
	TracerProvider trace.TracerProvider `yaml:"-"`
}

// EmailConfig is the email channel's section.
type EmailConfig struct {
	// From is the From header, "Name <address>". Required.
	From           string `yaml:"from"`
	DeliveryConfig `yaml:",inline"`
	// Providers are tried in this order on every try. Defaults to SES, then
	// SendGrid (region from AWS_REGION, key from SENDGRID_API_KEY).
	Providers []ProviderConfig `yaml:"providers"`
	// DNSResolver is the DNS server (host:port) Herald asks for the TXT
	// record that proves a tenant's sending domain is its own, when the
	// domain is registered with the platform's SES account, which every
	// tenant shares. Defaults to the system's resolver.
	DNSResolver string `yaml:"dns_resolver"`
}

// TextConfig is the section of a text channel: sms, or whatsapp.
type TextConfig struct {
	DeliveryConfig `yaml:",inline"`
	// Providers are tried in this order on every try: twilio, awssms
	// (sms only) or textdir. Required to deliver on the channel: without
	// any, the router skips the channel's recipients (herald dev writes
	// them to .herald/sms).
	Providers []ProviderConfig `yaml:"providers"`
}

// WhatsAppConfig is the whatsapp section.
type WhatsAppConfig struct {
	TextConfig `yaml:",inline"`
	// Templates are the approved WhatsApp content templates, by
	// notification template ("low_stock", or "low_stock/es" for one
	// language): {content_sid: HX…, variables: [sku, warehouse, on_hand]}.
	// Defaults to none: messages go as free-form text, which WhatsApp
	// delivers only inside a 24-hour session window.
	Templates sms.Templates `yaml:"templates"`
}

// WebhooksConfig is the webhook channel's section: signed POSTs to the
// endpoints tenants register, with their notifications' status events or as
// a channel of routes.
type WebhooksConfig struct {
	// The delivery keys are as for email, but MaxTries defaults to 15;
	// RetryDelay defaults to 5s; the wait doubles up to MaxRetryDelay:
	// tries over about a day.
	DeliveryConfig `yaml:",inline"`
	// MaxRetryDelay caps the wait between tries. Defaults to 6h.
	MaxRetryDelay time.Duration `yaml:"max_retry_delay"`
	// DisableAfter is how long an endpoint may keep failing before Herald
	// disables it. Defaults to 5 days (120h).
	DisableAfter time.Duration `yaml:"disable_after"`
	// AllowPrivateNetworks lets endpoints resolve to loopback, private,
	// link-local and metadata addresses — for development only (herald dev
	// sets it). Defaults to false: such an address is refused when dialled.
	AllowPrivateNetworks bool `yaml:"allow_private_networks"`
	// SecretGrace is how long a rotated-out signing secret keeps signing
	// beside the new one. Defaults to 24h.
	SecretGrace time.Duration `yaml:"secret_grace"`
}

// DeliveryConfig tunes a channel's delivery workers.
type DeliveryConfig struct {
	// Concurrency is how many messages are sent at once per priority, at
	// the most. Defaults to 8. Served fairly (scheduling.fair), fewer are
	// in flight while the provider answers at once — 18 a core across the
	// priorities, what the cores sustain — and all of them while it keeps
	// the sends waiting.
	Concurrency int `yaml:"concurrency"`
	// Timeout bounds one call to one provider. Defaults to 10s.
	Timeout time.Duration `yaml:"timeout"`
	// MaxTries is how many passes over the providers a notification gets
	// before it is given up and dead-lettered. Defaults to 10.
	MaxTries int `yaml:"max_tries"`
	// RetryDelay is the wait after a notification's first failed try; it
	// doubles with each try, up to five minutes (webhooks: up to
	// max_retry_delay). Defaults to 2s.
	RetryDelay time.Duration `yaml:"retry_delay"`
	// LockTTL is how long a worker's lease on a notification lasts.
	// Defaults to twice the consumer's AckWait (or the providers' timeouts
	// plus 30s, if longer).
	LockTTL time.Duration `yaml:"lock_ttl"`
}

// DocumentsConfig says how documents reach recipients.
type DocumentsConfig struct {
	// AttachMaxBytes is the largest document attached to an email; larger
	// ones are sent as a signed download link, when links are configured.
	// Defaults to 5 MiB.
	AttachMaxBytes int64 `yaml:"attach_max_bytes"`
	// LinkSecretEnv or LinkSecretFile name where the key that signs
	// download links is (at least 32 bytes); one-click unsubscribe links
	// and the keyed hashes an erasure leaves in an erased address's place
	// use keys derived from it. Without one, every document is attached
	// whatever its size, and subscribers cannot be erased.
	LinkSecretEnv string `yaml:"link_secret_env"`
	// LinkSecretFile is a file holding the key that signs download links,
	// instead of LinkSecretEnv.
	LinkSecretFile string `yaml:"link_secret_file"`
	// LinkTTL is how long a link works. Defaults to 7 days.
	LinkTTL time.Duration `yaml:"link_ttl"`
	// PublicURL is Herald's public address (api.listen) as recipients
	// reach it, e.g. https://herald.example.com. Defaults to
	// http://<api.listen>.
	PublicURL string `yaml:"public_url"`
	// Retention is how long a rendered document is kept after it was
	// stored; 0 keeps it forever, as business documents may have to be for
	// years. Defaults to 0.
	Retention time.Duration `yaml:"retention"`
}

// InboundConfig is what verifies the platform accounts' webhooks, which
// the api takes at /v1/inbound/<provider> (a tenant's own account's come
// to /v1/inbound/<provider>/<tenant>/<name>, verified by what the vault
// keeps). Twilio's are verified with the auth token of the twilio provider
// in sms.providers or whatsapp.providers, at the URL documents.public_url
// begins.
type InboundConfig struct {
	// SendGrid verifies the platform SendGrid account's event webhook.
	SendGrid struct {
		// PublicKey is the platform SendGrid account's Signed Event
		// Webhook verification key: base64, as SendGrid shows it.
		PublicKey string `yaml:"public_key"`
	} `yaml:"sendgrid"`
	// SES admits the platform SES account's events, which come through
	// SNS.
	SES struct {
		// Topics are the SNS topics (ARNs) the platform's SES events come
		// through; messages from any other topic are refused.
		Topics []string `yaml:"topics"`
	} `yaml:"ses"`
	// MaxAge is how old a signed timestamp may be before the request is
	// taken for a replay. Defaults to 5 minutes.
	MaxAge time.Duration `yaml:"max_age"`
}

// DLQConfig configures the DLQ service: alerts and the resend sweep.
type DLQConfig struct {
	// Alerts tell people when deliveries fail for good. Defaults to none.
	Alerts struct {
		// SlackURLEnv (or SlackURLFile) names where a Slack-compatible
		// incoming-webhook URL is (a secret: it lets anyone post).
		SlackURLEnv string `yaml:"slack_url_env"`
		// SlackURLFile is a file holding the Slack incoming-webhook URL,
		// instead of SlackURLEnv.
		SlackURLFile string `yaml:"slack_url_file"`
		// WebhookURLEnv (or WebhookURLFile) names where a URL that receives
		// each alert as JSON is.
		WebhookURLEnv string `yaml:"webhook_url_env"`
		// WebhookURLFile is a file holding the alert webhook's URL, instead
		// of WebhookURLEnv.
		WebhookURLFile string `yaml:"webhook_url_file"`
		// Window is the longest time between two alerts while failures
		// keep coming; the first failure after a quiet spell alerts at once.
		// Defaults to 1 minute.
		Window time.Duration `yaml:"window"`
	} `yaml:"alerts"`
	// Sweep resends, every so often, the notifications whose tries ran
	// out on transient failures.
	Sweep dlq.SweepConfig `yaml:"sweep"`
}

// ProviderConfig declares one email provider. Secrets are never written
// here: they come from the environment variable or file named.
type ProviderConfig struct {
	// Type is ses, sendgrid, smtp or maildir.
	Type string `yaml:"type"`
	// Endpoint overrides the API's base URL (ses, sendgrid), for a local
	// emulator.
	Endpoint string `yaml:"endpoint,omitempty"`

	// Region of SES. Defaults to AWS_REGION.
	Region string `yaml:"region,omitempty"`
	// AccessKeyIDEnv and SecretAccessKeyEnv name the variables holding SES
	// credentials. Defaults to the standard AWS chain (environment, shared
	// files, instance or pod role).
	AccessKeyIDEnv string `yaml:"access_key_id_env,omitempty"`
	// SecretAccessKeyEnv names the variable holding the secret of
	// AccessKeyIDEnv's key (ses, awssms).
	SecretAccessKeyEnv string `yaml:"secret_access_key_env,omitempty"`

	// APIKeyEnv names the variable holding SendGrid's API key, or
	// APIKeyFile a file holding it. Defaults to SENDGRID_API_KEY.
	APIKeyEnv string `yaml:"api_key_env,omitempty"`
	// APIKeyFile is a file holding SendGrid's API key, instead of
	// APIKeyEnv.
	APIKeyFile string `yaml:"api_key_file,omitempty"`

	// Host of the SMTP server. Required for smtp.
	Host string `yaml:"host,omitempty"`
	// Port of the SMTP server. Defaults to 587.
	Port int `yaml:"port,omitempty"`
	// Username for SMTP AUTH; the password comes from PasswordEnv or
	// PasswordFile.
	Username string `yaml:"username,omitempty"`
	// PasswordEnv names the variable holding the SMTP password.
	PasswordEnv string `yaml:"password_env,omitempty"`
	// PasswordFile is a file holding the SMTP password, instead of
	// PasswordEnv.
	PasswordFile string `yaml:"password_file,omitempty"`
	// TLS is mandatory (STARTTLS), opportunistic, implicit (SMTPS) or
	// none. Defaults to mandatory.
	TLS string `yaml:"tls,omitempty"`

	// Dir is where maildir writes .eml files, and textdir .json files.
	Dir string `yaml:"dir,omitempty"`

	// AccountSID is the Twilio account ("AC…"); its auth token comes from
	// AuthTokenEnv or AuthTokenFile. Required for twilio.
	AccountSID string `yaml:"account_sid,omitempty"`
	// AuthTokenEnv names the variable holding the Twilio account's auth
	// token. Defaults to TWILIO_AUTH_TOKEN.
	AuthTokenEnv string `yaml:"auth_token_env,omitempty"`
	// AuthTokenFile is a file holding the Twilio auth token, instead of
	// AuthTokenEnv.
	AuthTokenFile string `yaml:"auth_token_file,omitempty"`
	// From is the sending number in E.164 ("+14155550100"), for twilio —
	// the WhatsApp sender on whatsapp — or MessagingServiceSID ("MG…")
	// instead.
	From string `yaml:"from,omitempty"`
	// MessagingServiceSID is the Twilio messaging service ("MG…") that
	// picks the sender, instead of From.
	MessagingServiceSID string `yaml:"messaging_service_sid,omitempty"`
	// OriginationIdentity is the awssms sender: a phone number, sender
	// id, pool, or their ARN. Defaults to the account's choice.
	OriginationIdentity string `yaml:"origination_identity,omitempty"`
	// ConfigurationSet names an awssms configuration set (event
	// destinations). Optional.
	ConfigurationSet string `yaml:"configuration_set,omitempty"`
}

// ProviderTypes are the provider types Herald can build, by channel.
var ProviderTypes = map[string][]string{
	"email":    {"ses", "sendgrid", "smtp", "maildir"},
	"sms":      {"twilio", "awssms", "textdir"},
	"whatsapp": {"twilio", "textdir"},
}

// Load reads a config file strictly: an unknown field is an error naming
// its line, so a misspelt setting never silently becomes a default.
func Load(path string) (Config, error) {
	var cfg Config
	if path == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// WithDefaults fills every unset field.
func (c Config) WithDefaults() Config {
	c.NATS.URL = cmp.Or(c.NATS.URL, "nats://127.0.0.1:4222")
	c.HTTP.Listen = cmp.Or(c.HTTP.Listen, "127.0.0.1:8080")
	c.API.Listen = cmp.Or(c.API.Listen, "127.0.0.1:8081")
	c.Redis.Prefix = cmp.Or(c.Redis.Prefix, "herald:")
	c.Documents.LinkTTL = cmp.Or(c.Documents.LinkTTL, 7*24*time.Hour)
	c.Ledger.Retention = cmp.Or(c.Ledger.Retention, 90*24*time.Hour)
	c.Log.Level = cmp.Or(c.Log.Level, "info")
	c.Log.Format = cmp.Or(c.Log.Format, "text")
	c.Metrics.MaxTenants = cmp.Or(c.Metrics.MaxTenants, telemetry.DefaultMaxTenants)
	if c.Tenants.RequireRegistered == nil {
		required := true
		c.Tenants.RequireRegistered = &required
	}
	if c.Scheduling.Fair == nil {
		fair := true
		c.Scheduling.Fair = &fair
	}
	c.Plans = c.Plans.WithDefaults()
	c.Vault = c.Vault.WithDefaults()
	c.Inbox = c.Inbox.withDefaults()
	if len(c.Services) == 0 {
		// Every service — the history service only with an index to fill,
		// so that `herald run` needs no database; asked for by name, it
		// refuses to start without one.
		c.Services = slices.DeleteFunc(slices.Clone(Targets), func(s string) bool {
			return s == "history" && c.History.URL == "" || s == "outbox-relay" && c.Outbox.URL == "" ||
				s == "sms" && len(c.SMS.Providers) == 0 ||
				s == "whatsapp" && len(c.WhatsApp.Providers) == 0 ||
				s == "push" && !c.Push.Configured() || s == "inbox" && !c.Inbox.On()
		})
	}
	return c
}

// maxTenantsLimit caps metrics.max_tenants: each tenant is a series per
// metric and label combination, and Prometheus slows long before this.
const maxTenantsLimit = 10_000

// Validate checks what the services do not check themselves.
func (c Config) Validate() error {
	var problems []string
	for _, s := range c.Services {
		if !slices.Contains(Targets, s) {
			problems = append(problems, fmt.Sprintf("services: %q is not a service (want some of %v)", s, Targets))
		}
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		problems = append(problems, fmt.Sprintf("log.level: %q must be debug, info, warn or error", c.Log.Level))
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		problems = append(problems, fmt.Sprintf("log.format: %q must be text or json", c.Log.Format))
	}
	if c.Metrics.MaxTenants < 1 || c.Metrics.MaxTenants > maxTenantsLimit {
		problems = append(problems, fmt.Sprintf("metrics.max_tenants: %d must be between 1 and %d", c.Metrics.MaxTenants, maxTenantsLimit))
	}
	if c.Streams.Replicas < 0 || c.Streams.Replicas > 5 {
		problems = append(problems, fmt.Sprintf("streams.replicas: %d must be between 1 and 5", c.Streams.Replicas))
	}
	problems = append(problems, c.validateRetention()...)
	problems = append(problems, c.Push.problems(c.runs("push"))...)
	problems = append(problems, c.Inbox.problems(c.runs("inbox"))...)
	for _, p := range slices.Sorted(maps.Keys(c.Scheduling.Weights)) {
		switch w := c.Scheduling.Weights[p]; {
		case !slices.Contains(notification.Priorities, p):
			problems = append(problems, fmt.Sprintf("scheduling.weights.%s: not a priority (critical, normal, low)", p))
		case w < 1:
			problems = append(problems, fmt.Sprintf("scheduling.weights.%s: %d; a weight is at least 1", p, w))
		}
	}
	if w := c.Scheduling.Weights; w != nil && len(w) != len(notification.Priorities) {
		problems = append(problems, "scheduling.weights: give all three priorities a weight (critical, normal, low)")
	}
	if r := c.Email.DNSResolver; r != "" {
		if _, port, err := net.SplitHostPort(r); err != nil || port == "" {
			problems = append(problems, fmt.Sprintf("email.dns_resolver: %q is not host:port, such as 10.0.0.2:53", r))
		}
	}
	for _, err := range []error{c.Plans.Validate(), c.Vault.Validate()} {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	for _, ch := range []struct {
		channel   string
		providers []ProviderConfig
	}{{"email", c.Email.Providers}, {"sms", c.SMS.Providers}, {"whatsapp", c.WhatsApp.Providers}} {
		for i, p := range ch.providers {
			if problem := p.problem(ch.channel, fmt.Sprintf("%s.providers[%d]", ch.channel, i)); problem != "" {
				problems = append(problems, problem)
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// errReported is what a provider's builder returns for a provider whose
// declaration Config.Validate refuses: New has that problem already, in
// Validate's words, and reports it once.
var errReported = errors.New("reported by Config.Validate")

// problem is what is wrong with the declaration of a provider of channel
// (field names it in the file), or "": what can be told without building
// it. The builders start from here, so a problem is found in one place and
// reported once.
func (p ProviderConfig) problem(channel, field string) string {
	switch {
	case !slices.Contains(ProviderTypes[channel], p.Type):
		return fmt.Sprintf("%s.type: %q is not a%s provider (want one of %v)", field, p.Type,
			map[string]string{"email": "n email", "sms": "n sms", "whatsapp": " whatsapp"}[channel], ProviderTypes[channel])
	case (p.Type == "maildir" || p.Type == "textdir") && p.Dir == "":
		return fmt.Sprintf("%s.dir: is required for %s", field, p.Type)
	case p.Type == "smtp" && p.Host == "":
		return fmt.Sprintf("%s.host: is required for smtp", field)
	case p.Type == "twilio" && p.AccountSID == "":
		return fmt.Sprintf("%s.account_sid: is required for twilio", field)
	case p.Type == "twilio" && p.From == "" && p.MessagingServiceSID == "":
		return fmt.Sprintf("%s.from: is required for twilio (or messaging_service_sid)", field)
	}
	return ""
}

func (c Config) runs(service string) bool { return slices.Contains(c.Services, service) }

// FairScheduling says whether tenants are served in turn (scheduling.fair,
// on unless set false).
func (c Config) FairScheduling() bool { return c.Scheduling.Fair == nil || *c.Scheduling.Fair }

// StreamOptions adjusts the stream declarations to this configuration.
func (c Config) StreamOptions() streams.Options {
	var perTenant []string
	if c.FairScheduling() {
		perTenant = []string{"NOTIFY", "DOCS"}
	}
	return streams.Options{Replicas: c.Streams.Replicas, Templates: perTenant, MaxAge: map[string]time.Duration{
		"KV_deliveries":       c.Ledger.Retention,
		"KV_delivery_retries": c.Ledger.Retention,
		"OBJ_documents":       c.Documents.Retention,
		"KV_idempotency":      api.Config{IdempotencyTTL: c.API.IdempotencyTTL}.WithDefaults().IdempotencyTTL,
	}}
}

// validateRetention checks the ledger outlasts every copy of a delivery,
// and a document every delivery that carries or links it.
func (c Config) validateRetention() []string {
	window, why, err := comebackWindow()
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if c.Ledger.Retention < window {
		problems = append(problems, fmt.Sprintf("ledger.retention: %s is shorter than %s, the longest a copy of a delivery can take to come back (%s); "+
			"a copy arriving after its ledger entry expired is sent again", days(c.Ledger.Retention), days(window), why))
	}
	if r := c.Documents.Retention; r != 0 && r < window+c.Documents.LinkTTL {
		problems = append(problems, fmt.Sprintf("documents.retention: %s is shorter than %s: a delivery can come back %s after its document was stored (%s), "+
			"and its link must then work for documents.link_ttl (%s); 0 keeps documents forever",
			days(r), days(window+c.Documents.LinkTTL), days(window), why, days(c.Documents.LinkTTL)))
	}
	return problems
}

// comebackWindow is the longest a copy of a delivery can take to reach a
// worker again, read from the stream declarations: a dead letter is kept
// for a redrive as long as DLQ keeps it, and a redriven event may then wait
// in each stream on its way back to a worker — its input stream, DOCS,
// NOTIFY — as long as each keeps a message. (The sweep's resends rewrite
// the ledger entry, so they start its retention anew.)
func comebackWindow() (time.Duration, string, error) {
	all, err := streams.Load()
	if err != nil {
		return 0, "", err
	}
	age := map[string]time.Duration{}
	for _, s := range all {
		age[s.Config.Name] = s.Config.MaxAge
	}
	input := max(age["ORDERS"], age["INVENTORY"])
	window := age["DLQ"] + input + age["DOCS"] + age["NOTIFY"]
	why := fmt.Sprintf("a dead letter is kept %s for a redrive, then may wait %s in ORDERS or INVENTORY, %s in DOCS and %s in NOTIFY",
		days(age["DLQ"]), days(input), days(age["DOCS"]), days(age["NOTIFY"]))
	return window, why, nil
}

// days shows a retention the way operators set it.
func days(d time.Duration) string {
	switch {
	case d == 24*time.Hour:
		return "1 day (24h)"
	case d > 0 && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days (%dh)", d/(24*time.Hour), d/time.Hour)
	}
	return d.String()
}
