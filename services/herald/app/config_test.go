package app_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/streams"
)

func write(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	return path
}

func TestLoad(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(write(t, `
nats: {url: "nats://nats:4222"}
router:
  channels: [email, sms]
  routes:
    - event: order.shipped
      document: delivery_note
      channels: [email]
email:
  from: "Orders <orders@acme.example>"
  providers:
    - {type: maildir, dir: /var/spool/herald}
`))
	require.NoError(t, err)
	require.Equal(t, "nats://nats:4222", cfg.NATS.URL)
	require.Len(t, cfg.Router.Routes, 1)
	require.Equal(t, "delivery_note", cfg.Router.Routes[0].Document)
	require.Equal(t, "/var/spool/herald", cfg.Email.Providers[0].Dir)

	empty, err := app.Load("")
	require.NoError(t, err)
	require.Equal(t, app.Config{}, empty)
}

// A wait until the send before it is delivered is taken: start-up
// accepts it (read, which needs the inbox channel, it refuses).
func TestLoadAcceptsAWaitUntilDelivered(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(write(t, `
router:
  routes:
    - event: order.created
      document: purchase_order
      steps:
        - send: {channels: [email]}
        - wait: {for: 24h, until_status: delivered}
        - send: {channels: [email]}
`))
	require.NoError(t, err)
	cfg.Services = []string{"router", "workflow"}
	_, err = app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
}

// The whatsapp templates load as README.md writes them.
func TestLoadReadsWhatsAppTemplates(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(write(t, `
whatsapp:
  templates:
    low_stock: {content_sid: HX00000000000000000000000000000000, variables: [sku, warehouse, on_hand]}
    low_stock/es: {content_sid: HX00000000000000000000000000000001, variables: [sku, warehouse, on_hand]}
`))
	require.NoError(t, err)
	require.Equal(t, "HX00000000000000000000000000000001", cfg.WhatsApp.Templates["low_stock/es"].ContentSID)
	require.Equal(t, []string{"sku", "warehouse", "on_hand"}, cfg.WhatsApp.Templates["low_stock"].Variables)
}

func TestLoadRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	_, err := app.Load(write(t, "email:\n  form: \"Orders <orders@acme.example>\"\n"))
	require.ErrorContains(t, err, "line 2: field form not found")
}

func TestNewNamesTheFieldAtFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"log level", "log: {level: loud}", `log.level: "loud" must be debug, info, warn or error`},
		{"provider type", "email: {from: a@b.example, providers: [{type: pigeon}]}", `email.providers[0].type: "pigeon" is not an email provider`},
		{"maildir without dir", "email: {from: a@b.example, providers: [{type: maildir}]}", `email.providers[0].dir: is required for maildir`},
		{"no from", "email: {providers: [{type: maildir, dir: /tmp/x}]}", `email.from: "" is not an address`},
		{"default chain without a region", "email: {from: a@b.example}", `email.providers[0].region: is required for ses (or set AWS_REGION)`},
		{"delivery without redis", "email: {from: a@b.example, providers: [{type: maildir, dir: /tmp/x}]}", `redis.url: required by email delivery`},
		{"smtp without host", "email: {from: a@b.example, providers: [{type: smtp}]}", `email.providers[0].host: is required for smtp`},
		{"dns resolver without a port", "email: {dns_resolver: 10.0.0.2}", `email.dns_resolver: "10.0.0.2" is not host:port, such as 10.0.0.2:53`},
		{"route to a missing template", "router: {routes: [{event: order.created, template: quote, channels: [email]}]}",
			`router.routes[0].template: no email template "quote"`},
		{"workflow step to a missing template", "router: {channels: [email, whatsapp], routes: [{event: order.created, document: purchase_order, channels: [email], " +
			"steps: [{send: {}}, {wait: {for: 24h, until_event: order.confirmed}}, {send: {template: po_remind, channels: [whatsapp]}}]}]}",
			`router.routes[0].steps[2].send.template: no whatsapp template "po_remind"`},
		{"bad route", "router: {routes: [{event: order.created, document: quote, channels: [email]}]}",
			`router.routes[0].document: "quote" is not a document type`},
		{"workflow wait without a bound", "router: {routes: [{event: order.created, document: purchase_order, steps: [{send: {channels: [email]}}, {wait: {until_status: delivered}}]}]}",
			`router.routes[0].steps[1].wait: needs a bound: for, until or until_event`},
		{"digest without its template's digest form", "router: {routes: [{event: order.created, document: purchase_order, roles: [supplier], steps: [{digest: {key: \"{{.Order.Buyer.Name}}\", window: 15m}}, {send: {channels: [email]}}]}]}",
			`router.routes[0].steps[1].send.template: no email template "purchase_order_digest"`},
		{"until_status read", "router: {routes: [{event: order.created, document: purchase_order, steps: [{send: {channels: [email]}}, {wait: {for: 1h, until_status: read}}]}]}",
			`router.routes[0].steps[1].wait.until_status: read needs the send it follows (steps[0]) to be on channel inbox`},
		{"pdf concurrency", "pdf: {concurrency: -1}", `pdf.concurrency: must be 1 or more (got -1)`},
		{"sweep limit", "dlq: {sweep: {limit: -1}}", `dlq.sweep: limit and max_resends must be 1 or more`},
		{"replicas", "streams: {replicas: 7}", `streams.replicas: 7 must be between 1 and 5`},
		{"negative max tenants", "metrics: {max_tenants: -1}", `metrics.max_tenants: -1 must be between 1 and 10000`},
		{"too many max tenants", "metrics: {max_tenants: 1000000}", `metrics.max_tenants: 1000000 must be between 1 and 10000`},
		{"ledger forgets too soon", "ledger: {retention: 720h}", `ledger.retention: 30 days (720h) is shorter than 51 days (1224h), ` +
			`the longest a copy of a delivery can take to come back (a dead letter is kept 30 days (720h) for a redrive, then may wait 7 days (168h) in ORDERS or INVENTORY`},
		{"documents go before their deliveries", "documents: {retention: 1000h}", `documents.retention: 1000h0m0s is shorter than 58 days (1392h)`},
		{"sms concurrency", "redis: {url: \"redis://127.0.0.1:1\"}\nsms: {concurrency: -1, providers: [{type: textdir, dir: /tmp/x}]}",
			`sms.concurrency: must be 1 or more (got -1)`},
		// The webhook channel is set under webhooks:, whatever the channel's name.
		{"webhooks concurrency", "webhooks: {concurrency: -1}", `webhooks.concurrency: must be 1 or more (got -1)`},
		{"webhooks timeout", "webhooks: {timeout: 1ms}", `webhooks.timeout: 1ms is too short (at least 100ms)`},
		{"webhooks grace", "webhooks: {secret_grace: -1s}", `webhooks.secret_grace: must not be negative (got -1s)`},
		{"whatsapp provider type", "whatsapp: {providers: [{type: awssms, region: eu-west-1}]}",
			`whatsapp.providers[0].type: "awssms" is not a whatsapp provider (want one of [twilio textdir])`},
		{"sendgrid webhook key", "inbound: {sendgrid: {public_key: bm90IGEga2V5}}", `inbound.sendgrid.public_key: not a DER public key`},
		{"ses topic", "inbound: {ses: {topics: [herald-events]}}", `inbound.ses.topics[0]: "herald-events" is not a topic ARN`},
		{"twilio without a sender", "sms: {providers: [{type: twilio, account_sid: AC00000000000000000000000000000000}]}",
			`sms.providers[0].from: is required for twilio (or messaging_service_sid)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := app.Load(write(t, tt.yaml))
			require.NoError(t, err)
			_, err = app.New(cfg, slog.New(slog.DiscardHandler))
			require.ErrorContains(t, err, tt.want)
			for line := range strings.Lines(err.Error()) {
				require.False(t, strings.HasPrefix(line, "webhook."), "no section of the file is named webhook: %s", line)
			}
		})
	}
}

// Each problem is reported once, in Validate's words, however many of the
// checks before start-up come across it: a provider's declaration is
// checked by Config.Validate, and the service that builds the chain does
// not report it again.
func TestEachProblemIsReportedOnce(t *testing.T) {
	t.Parallel()
	for _, y := range []string{
		"email: {from: a@b.example, providers: [{type: pigeon}]}",
		"email: {from: a@b.example, providers: [{type: twilio}]}",
		"email: {from: a@b.example, providers: [{type: smtp}]}",
		"email: {from: a@b.example, providers: [{type: maildir}, {type: pigeon}]}",
		"sms: {providers: [{type: pigeon}]}",
		"sms: {providers: [{type: twilio}]}",
		"sms: {providers: [{type: textdir}, {type: twilio, account_sid: AC00000000000000000000000000000000}]}",
		"whatsapp: {providers: [{type: awssms, region: eu-west-1}]}",
	} {
		cfg, err := app.Load(write(t, "redis: {url: \"redis://127.0.0.1:1\"}\n"+y))
		require.NoError(t, err)
		cfg.Getenv = func(k string) string {
			return map[string]string{"AWS_REGION": "eu-west-1", "SENDGRID_API_KEY": "SG.x", "TWILIO_AUTH_TOKEN": "x"}[k]
		}
		_, err = app.New(cfg, slog.New(slog.DiscardHandler))
		require.Error(t, err, y)
		var fields []string
		for line := range strings.Lines(err.Error()) {
			field, _, _ := strings.Cut(line, ":")
			fields = append(fields, strings.TrimSuffix(field, ".type"))
		}
		for _, f := range fields {
			require.Equalf(t, 1, countPrefix(fields, f), "%s: reported more than once:\n%s", f, err)
		}
	}
	cfg, err := app.Load(write(t, "email: {from: a@b.example, providers: [{type: pigeon}]}\nredis: {url: \"redis://127.0.0.1:1\"}"))
	require.NoError(t, err)
	_, err = app.New(cfg, slog.New(slog.DiscardHandler))
	require.EqualError(t, err, `email.providers[0].type: "pigeon" is not an email provider (want one of [ses sendgrid smtp maildir])`)
}

// countPrefix counts the fields that are f or a field under it.
func countPrefix(fields []string, f string) int {
	n := 0
	for _, g := range fields {
		if g == f || strings.HasPrefix(g, f+".") || strings.HasPrefix(f, g+".") {
			n++
		}
	}
	return n
}

// The webhooks section's problems come in the same order every time (the
// order of its keys), not in a map's.
func TestWebhooksProblemsComeInOrder(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(write(t, `
redis: {url: "redis://127.0.0.1:1"}
webhooks: {max_retry_delay: -1s, disable_after: -1s, secret_grace: -1s, concurrency: -1}
`))
	require.NoError(t, err)
	cfg.Services = []string{"webhook"}
	want := "webhooks.concurrency: must be 1 or more (got -1)\n" +
		"webhooks.disable_after: must not be negative (got -1s)\n" +
		"webhooks.max_retry_delay: must not be negative (got -1s)\n" +
		"webhooks.secret_grace: must not be negative (got -1s)"
	for range 20 {
		_, err := app.New(cfg, slog.New(slog.DiscardHandler))
		require.EqualError(t, err, want)
	}
}

// The history service needs its database, named in a form the index
// takes (a password in a bad URL is not repeated). Run with every service,
// a process without one runs all but the history service.
func TestTheHistoryServiceNeedsItsIndex(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"":                                   "history.url: the history service needs the notification index",
		"mysql://herald:s3cret-pw@db/herald": `history.url: "mysql://herald:`,
	} {
		cfg := app.Config{Services: []string{"history"}}
		cfg.History.URL = url
		_, err := app.New(cfg, slog.New(slog.DiscardHandler))
		require.ErrorContains(t, err, want, url)
		require.NotContains(t, err.Error(), "s3cret-pw")
	}
	require.NotContains(t, app.Config{}.WithDefaults().Services, "history")
	var withIndex app.Config
	withIndex.History.URL = "sqlite:history.db"
	require.Contains(t, withIndex.WithDefaults().Services, "history")
}

func TestNewRefusesUnknownService(t *testing.T) {
	t.Parallel()
	cfg := app.Config{Services: []string{"router", "fax"}}
	_, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, `services: "fax" is not a service`)
}

func TestDefaultChainIsSESThenSendGrid(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AWS_REGION": "eu-west-1"}
	cfg := app.Config{Getenv: func(k string) string { return env[k] }}
	cfg.Email.From = "Orders <orders@acme.example>"
	cfg.Redis.URL = "redis://127.0.0.1:1"
	_, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.EqualError(t, err, "email.providers[1].api_key_env: the environment variable SENDGRID_API_KEY is not set")

	env["SENDGRID_API_KEY"] = "SG.SECRET-must-not-leak"
	a, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Stop(context.Background())) }) // its Redis client
	require.Equal(t, []string{"ses", "sendgrid"}, a.ProviderNames())
}

func TestSecretsComeFromFilesOrEnvironmentNeverTheYAML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "sendgrid.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("SG.from-a-file\n"), 0o600))
	cfg, err := app.Load(write(t, `
redis: {url: "redis://127.0.0.1:1"}
email:
  from: "Orders <orders@acme.example>"
  providers:
    - {type: ses, region: eu-west-1, access_key_id_env: SES_ID, secret_access_key_env: SES_SECRET}
    - {type: sendgrid, api_key_file: `+keyFile+`}
`))
	require.NoError(t, err)
	cfg.Getenv = func(k string) string { return map[string]string{"SES_ID": "AKIA-TEST"}[k] }
	_, err = app.New(cfg, slog.New(slog.DiscardHandler))
	require.EqualError(t, err, "email.providers[0].secret_access_key_env: the environment variable SES_SECRET is not set")

	_, err = app.Load(write(t, "email: {providers: [{type: sendgrid, api_key: SG.inline}]}"))
	require.ErrorContains(t, err, "field api_key not found", "a secret cannot be written in the file")
}

// Unset, the retentions are the declared ones: applying the defaults
// changes nothing on the server.
func TestRetentionDefaultsAreTheDeclaredOnes(t *testing.T) {
	t.Parallel()
	cfg := app.Config{}.WithDefaults()
	require.NoError(t, cfg.Validate())
	opts := cfg.StreamOptions()
	require.Len(t, opts.MaxAge, 4)
	for name, age := range opts.MaxAge {
		s, err := streams.Find(name)
		require.NoError(t, err)
		require.Equal(t, s.Config.MaxAge, age, name)
	}
	require.Equal(t, 90*24*time.Hour, opts.MaxAge["KV_deliveries"])

	cfg.Ledger.Retention, cfg.Documents.Retention = 400*24*time.Hour, 10*365*24*time.Hour
	require.NoError(t, cfg.Validate())
	opts = cfg.StreamOptions()
	require.Equal(t, map[string]time.Duration{"KV_deliveries": 400 * 24 * time.Hour, "KV_delivery_retries": 400 * 24 * time.Hour,
		"OBJ_documents": 10 * 365 * 24 * time.Hour, "KV_idempotency": 24 * time.Hour}, opts.MaxAge)
}

// redis.cluster_addrs is a Cluster's nodes as managed services list them;
// with redis.url too, Redis is named twice.
func TestRedisClusterAddrs(t *testing.T) {
	t.Parallel()
	var cfg app.Config
	cfg.Services = []string{"router"}
	cfg.Redis.ClusterAddrs = []string{"n1:6379", "n2:6379"}
	cfg.Redis.URL = "redis://r:6379"
	_, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "redis.cluster_addrs: and redis.url (or REDIS_URL) name Redis twice")
	cfg.Redis.URL = ""
	_, err = app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	cfg.Redis.URL = "redis+sentinel://:s3cret@s1:26379"
	cfg.Redis.ClusterAddrs = nil
	_, err = app.New(cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "redis.url: a sentinel URL names the master")
	require.NotContains(t, err.Error(), "s3cret")
}

// A step is exactly one kind with the keys that kind has: the file's
// strict decoding holds inside a step too, each refusal naming its line.
func TestLoadRefusesMalformedSteps(t *testing.T) {
	t.Parallel()
	route := "router:\n  routes:\n    - event: order.created\n      document: purchase_order\n      steps:\n"
	tests := []struct {
		name, step, want string
	}{
		{"unknown kind", "        - sleep: {for: 1h}", `line 6: "sleep" is not a step (want one of send, wait, throttle, digest, window)`},
		{"two kinds", "        - {send: {channels: [email]}, wait: {for: 1h}}",
			"line 6: a step is exactly one of send, wait, throttle, digest, window (got send and wait)"},
		{"no kind", "        - {}", "line 6: a step is exactly one of send, wait, throttle, digest, window (got none)"},
		{"not a mapping", "        - send", "line 6: a step is a mapping with one of send, wait, throttle, digest, window"},
		{"misspelt key", "        - wait:\n            for: 1h\n            untill_event: order.confirmed",
			`line 8: wait has no key "untill_event" (want some of for, until, until_event, until_status)`},
		{"a key of another kind", "        - send: {channels: [email], for: 1h}", `line 6: send has no key "for" (want some of channels, fallback, template, roles)`},
		{"bad duration", "        - wait: {for: 1w}", `duration "1w": want a number of s, m, h or d`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := app.Load(write(t, route+tt.step+"\n"))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// Issue 34's two workflows, as the router's testdata writes them, load
// strictly and validate.
func TestIssueWorkflowsLoad(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(filepath.Join("..", "..", "router", "testdata", "workflows.yaml"))
	require.NoError(t, err)
	require.Len(t, cfg.Router.Routes, 2)
	require.Len(t, cfg.Router.Routes[0].Steps, 5)
	require.Equal(t, router.Duration(24*time.Hour), cfg.Router.Routes[0].Steps[1].Wait.For)
	require.Equal(t, "{{.Stock.Warehouse}}", cfg.Router.Routes[1].Steps[1].Digest.Key)
	cfg.Router.Channels = event.Channels
	require.NoError(t, cfg.Router.WithDefaults().Validate())
}

// The workflows the guide runs with `herald dev --config
// examples/workflows.yaml` are a configuration Herald starts with: every
// step built, every send's template there.
func TestTheWorkflowExampleStarts(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(filepath.Join("..", "..", "..", "examples", "workflows.yaml"))
	require.NoError(t, err)
	require.Len(t, cfg.Router.Routes, 2)
	// As herald dev fills in: local sinks for every channel.
	cfg.Redis.URL = "redis://127.0.0.1:1"
	cfg.Email.From = "herald@example.com"
	cfg.Email.Providers = []app.ProviderConfig{{Type: "maildir", Dir: t.TempDir()}}
	cfg.SMS.Providers = []app.ProviderConfig{{Type: "textdir", Dir: t.TempDir()}}
	cfg.WhatsApp.Providers = []app.ProviderConfig{{Type: "textdir", Dir: t.TempDir()}}
	a, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Stop(context.Background())) }) // its Redis clients
}

// push: and inbox: are checked before anything is read, each problem
// naming its field.
func TestPushAndInboxProblemsNameTheField(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, yaml, want string }{
		{"fcm without credentials", `push: {fcm: {endpoint: "https://fcm.example"}}`, `push.fcm.credentials_file: required (or credentials_env)`},
		{"fcm credentials twice", `push: {fcm: {credentials_file: /a.json, credentials_env: FCM}}`,
			`push.fcm.credentials_file: and push.fcm.credentials_env name the secret twice: give one`},
		{"apns without key", `push: {apns: {key_id: ABC123DEFG, team_id: DEF123GHIJ, topic: com.example.app}}`, `push.apns.key_file: required (or key_env)`},
		{"apns without key id", `push: {apns: {key_file: /k.p8, team_id: DEF123GHIJ, topic: com.example.app}}`, `push.apns.key_id: required with push.apns.key_file`},
		{"apns without team", `push: {apns: {key_env: APNS_KEY, key_id: ABC123DEFG, topic: com.example.app}}`, `push.apns.team_id: required with push.apns.key_env`},
		{"apns without topic", `push: {apns: {key_file: /k.p8, key_id: ABC123DEFG, team_id: DEF123GHIJ}}`, `push.apns.topic: required with push.apns.key_file`},
		{"apns host not https", `push: {apns: {key_file: /k.p8, key_id: A, team_id: B, topic: c, host: "http://apns.example"}}`,
			`push.apns.host: "http://apns.example" must be an https:// URL`},
		{"webpush without private key", `push: {webpush: {vapid_public_key: BPub, contact: "mailto:ops@example.com"}}`,
			`push.webpush.vapid_private_key_file: required (or vapid_private_key_env)`},
		{"webpush without public key", `push: {webpush: {vapid_private_key_file: /v.key, contact: "mailto:ops@example.com"}}`,
			`push.webpush.vapid_public_key: required with push.webpush.vapid_private_key_file`},
		{"webpush without contact", `push: {webpush: {vapid_public_key: BPub, vapid_private_key_env: VAPID}}`,
			`push.webpush.contact: required with push.webpush.vapid_private_key_env`},
		{"webpush contact not mailto", `push: {webpush: {vapid_public_key: BPub, vapid_private_key_env: VAPID, contact: ops@example.com}}`,
			`push.webpush.contact: "ops@example.com" must be mailto:address or an https:// URL`},
		{"webpush negative ttl", `push: {webpush: {vapid_public_key: BPub, vapid_private_key_env: VAPID, contact: "mailto:o@e.com", ttl: -1s}}`,
			`push.webpush.ttl: must not be negative (got -1s)`},
		{"inbox retention", `inbox: {retention: -1h}`, `inbox.retention: must not be negative (got -1h0m0s)`},
		{"inbox max items", `inbox: {max_items: -5}`, `inbox.max_items: -5 is not a number of items from 1 to 4000`},
		{"inbox max items past the cap", `inbox: {max_items: 4001}`, `inbox.max_items: 4001 is not a number of items from 1 to 4000`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := app.Load(write(t, tt.yaml))
			require.NoError(t, err)
			require.ErrorContains(t, cfg.WithDefaults().Validate(), tt.want)
		})
	}
}

// With inbox.enabled false, the inbox service is not among the defaults,
// and asked for by name it refuses to start: the router sends it nothing.
func TestAnInboxSwitchedOffDoesNotRun(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(write(t, "inbox: {enabled: false}"))
	require.NoError(t, err)
	require.NotContains(t, cfg.WithDefaults().Services, "inbox")
	cfg.Services = []string{"inbox"}
	require.ErrorContains(t, cfg.WithDefaults().Validate(), "inbox: the inbox service runs, but inbox.enabled is false")
}

// push: and inbox: load as docs/CONFIGURATION.md writes them, with the
// inbox's defaults; a push provider puts the push service among the
// defaults, as an sms provider puts sms.
func TestPushAndInboxLoad(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(write(t, `
push:
  max_tries: 4
  fcm: {credentials_file: /etc/herald/fcm.json}
  apns: {key_env: APNS_KEY, key_id: ABC123DEFG, team_id: DEF123GHIJ, topic: com.example.app, production: true}
  webpush: {vapid_public_key: BPub, vapid_private_key_file: /etc/herald/vapid.key, contact: "mailto:ops@example.com", ttl: 1h}
inbox: {max_items: 50}
`))
	require.NoError(t, err)
	require.NoError(t, cfg.WithDefaults().Validate())
	require.Equal(t, 4, cfg.Push.MaxTries)
	require.True(t, cfg.Push.APNs.Production)
	require.Equal(t, time.Hour, cfg.Push.WebPush.TTL)
	d := cfg.WithDefaults()
	require.Equal(t, 50, d.Inbox.MaxItems)
	require.Equal(t, app.DefaultInboxRetention, d.Inbox.Retention)
	require.True(t, d.Inbox.On())
}
