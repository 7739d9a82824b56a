package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/tenant"
)

// tenantsServer starts NATS with the streams declared, for the command
// line to reach as a user's would.
func tenantsServer(t *testing.T) {
	t.Helper()
	n := heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
}

// heraldJSON runs a command with --json and decodes what it prints.
func heraldJSON[T any](t *testing.T, args ...string) T {
	t.Helper()
	out, err := herald(t, append(args, "--json")...)
	require.NoError(t, err)
	var v T
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	return v
}

func TestTenantsCreateListShow(t *testing.T) {
	tenantsServer(t)

	out, err := herald(t, "tenants", "list")
	require.NoError(t, err)
	require.Equal(t, "no tenants (herald tenants create ID --plan P registers one)\n", out)
	out, err = herald(t, "tenants", "list", "--json")
	require.NoError(t, err)
	require.Equal(t, "[]\n", out)

	out, err = herald(t, "tenants", "create", "acme", "--plan", "startup", "--name", "Acme Logistics",
		"--from", "Acme Orders <orders@acme.example>", "--providers", "acme-ses, sendgrid", "--sms-providers", "acme-twilio,awssms")
	require.NoError(t, err)
	require.Equal(t, "registered tenant acme (plan startup, active)\n", out)

	zarya := heraldJSON[tenant.Tenant](t, "tenants", "create", "zarya", "--plan", "free")
	require.Equal(t, "zarya", zarya.ID)
	require.Equal(t, tenant.Active, zarya.Status)
	require.False(t, zarya.CreatedAt.IsZero())

	list := heraldJSON[[]tenant.Tenant](t, "tenants", "list")
	require.Len(t, list, 2)
	require.Equal(t, "acme", list[0].ID)
	require.Equal(t, []string{"acme-ses", "sendgrid"}, list[0].Providers)
	require.Equal(t, []string{"acme-twilio", "awssms"}, list[0].SMSProviders)
	require.Empty(t, list[0].WhatsAppProviders)
	require.Equal(t, "zarya", list[1].ID)

	out, err = herald(t, "tenants", "list")
	require.NoError(t, err)
	require.Equal(t, strings.Join([]string{
		"ID     NAME            PLAN     STATUS  FROM                               PROVIDERS                                 UPDATED",
		"acme   Acme Logistics  startup  active  Acme Orders <orders@acme.example>  acme-ses,sendgrid sms:acme-twilio,awssms  " + list[0].UpdatedAt.Format(time.DateTime),
		"zarya  -               free     active  -                                  -                                         " + list[1].UpdatedAt.Format(time.DateTime),
		"2 tenants",
		""}, "\n"), out)

	out, err = herald(t, "tenants", "show", "acme")
	require.NoError(t, err)
	require.Equal(t, strings.Join([]string{
		"id:                  acme",
		"name:                Acme Logistics",
		"plan:                startup",
		"status:              active",
		"from:                Acme Orders <orders@acme.example>",
		"providers:           acme-ses, sendgrid",
		"sms providers:       acme-twilio, awssms",
		"whatsapp providers:  (the platform's whatsapp.providers)",
		"history kept:        (the platform's ledger.retention)",
		"payloads kept:       (the platform's documents.retention)",
		"inbox kept:          (the platform's inbox.retention)",
		"created:             " + list[0].CreatedAt.Format(time.RFC3339),
		"updated:             " + list[0].UpdatedAt.Format(time.RFC3339),
		""}, "\n"), out)
	out, err = herald(t, "tenants", "show", "zarya")
	require.NoError(t, err)
	require.Contains(t, out, "from:                (the platform's email.from)\n")
	require.Contains(t, out, "providers:           (the platform's email.providers)\n")

	shown := heraldJSON[tenant.Tenant](t, "tenants", "show", "zarya")
	require.True(t, zarya.UpdatedAt.Equal(shown.UpdatedAt))
	require.Equal(t, zarya.Plan, shown.Plan)
}

func TestTenantsCreateRefuses(t *testing.T) {
	tenantsServer(t)
	_, err := herald(t, "tenants", "create", "acme", "--plan", "startup")
	require.NoError(t, err)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"acme", "--plan", "free"}, `tenant "acme" is already registered`},
		{[]string{"zarya"}, `required flag(s) "plan" not set`},
		{[]string{"zarya", "--plan", "gold"}, `invalid tenant: plan: "gold" is not a plan (known: enterprise, free, indie, startup); ` +
			`checked against the built-in plans (no --config or HERALD_CONFIG given), as no service has published its plans to bucket plans`},
		{[]string{"zarya.eu", "--plan", "free", "--from", "nobody"}, `invalid tenant: id: "zarya.eu" is not a tenant id (1 to 64 letters, digits, '-' or '_'); ` +
			`from: "nobody" is not one address like "Acme <orders@acme.example>" (mail: missing '@' or angle-addr)`},
	} {
		_, err := herald(t, append([]string{"tenants", "create"}, tt.args...)...)
		require.EqualError(t, err, tt.want, tt.args)
	}
	list := heraldJSON[[]tenant.Tenant](t, "tenants", "list")
	require.Len(t, list, 1, "nothing refused was stored")
	require.Equal(t, "startup", list[0].Plan)

	_, err = herald(t, "tenants", "show", "nobody")
	require.EqualError(t, err, `tenant "nobody" is not registered`)
}

func TestTenantsSet(t *testing.T) {
	tenantsServer(t)
	_, err := herald(t, "tenants", "create", "acme", "--plan", "startup", "--from", "orders@acme.example")
	require.NoError(t, err)

	out, err := herald(t, "tenants", "set", "acme", "--status", "suspended", "--providers", "acme-ses,sendgrid")
	require.NoError(t, err)
	require.Equal(t, "updated tenant acme: status: active → suspended; providers: - → acme-ses,sendgrid\n", out)

	acme := heraldJSON[tenant.Tenant](t, "tenants", "set", "acme", "--plan", "enterprise", "--from", "", "--name", "Acme")
	require.Equal(t, "enterprise", acme.Plan)
	require.Empty(t, acme.From, `--from "" goes back to the platform's`)
	require.Equal(t, "Acme", acme.Name)
	require.Equal(t, tenant.Suspended, acme.Status, "what no flag names stays")
	require.Equal(t, []string{"acme-ses", "sendgrid"}, acme.Providers)

	out, err = herald(t, "tenants", "set", "acme", "--plan", "enterprise")
	require.NoError(t, err)
	require.Equal(t, "updated tenant acme: nothing changed\n", out)

	_, err = herald(t, "tenants", "set", "acme")
	require.EqualError(t, err, "nothing to set: give --plan, --status, --from, --providers, --sms-providers, --whatsapp-providers, --name, --logo-url, --colour, --inbox-origins or --retention")
	_, err = herald(t, "tenants", "set", "acme", "--status", "paused")
	require.EqualError(t, err, `invalid tenant: status: "paused" is not a status (want active or suspended)`)
	_, err = herald(t, "tenants", "set", "acme", "--providers", "ses,ses")
	require.EqualError(t, err, `invalid tenant: providers[1]: "ses" is already in the chain`)
	_, err = herald(t, "tenants", "set", "nobody", "--plan", "free")
	require.EqualError(t, err, `tenant "nobody" is not registered`)

	out, err = herald(t, "tenants", "set", "acme", "--inbox-origins", "https://app.acme.example, http://localhost:3000")
	require.NoError(t, err)
	require.Equal(t, "updated tenant acme: inbox_origins: - → https://app.acme.example,http://localhost:3000\n", out)
	_, err = herald(t, "tenants", "set", "acme", "--inbox-origins", "http://app.acme.example")
	require.ErrorContains(t, err, `inbox_origins[0]: "http://app.acme.example" is not an origin`)

	shown := heraldJSON[tenant.Tenant](t, "tenants", "show", "acme")
	require.Equal(t, tenant.Suspended, shown.Status, "refused changes wrote nothing")
	require.Equal(t, []string{"https://app.acme.example", "http://localhost:3000"}, shown.InboxOrigins)
	require.Equal(t, []string{"acme-ses", "sendgrid"}, shown.Providers)
}

// --retention sets the periods it names, shows them, goes back to the
// platform's on an empty one, and refuses a mistake naming the field.
func TestTenantsSetRetention(t *testing.T) {
	tenantsServer(t)
	_, err := herald(t, "tenants", "create", "acme", "--plan", "startup", "--retention", "payloads=60d")
	require.NoError(t, err)

	out, err := herald(t, "tenants", "set", "acme", "--retention", "history=30d,payloads=36h,inbox=14d")
	require.NoError(t, err)
	require.Equal(t, "updated tenant acme: retention.history: - → 30d; retention.payloads: 60d → 36h; retention.inbox: - → 14d\n", out)
	out, err = herald(t, "tenants", "get", "acme")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^history kept: +30d$`, out)
	require.Regexp(t, `(?m)^payloads kept: +36h$`, out)
	require.Regexp(t, `(?m)^inbox kept: +14d$`, out)

	for spec, want := range map[string]string{
		"history=90x":  `invalid tenant: retention.history: "90x" is not a period like 90d or 12h`,
		"history=12h":  `invalid tenant: retention.history: 12h is shorter than a day, the least Herald keeps anything`,
		"history=91d":  `invalid tenant: retention.history: 91d is longer than the ledger keeps notifications (90d, ledger.retention)`,
		"ledger=1d":    `invalid tenant: retention: "ledger=1d" is not history=PERIOD, payloads=PERIOD or inbox=PERIOD`,
		"payloads=-1d": `invalid tenant: retention.payloads: "-1d" is not a period like 90d or 12h`,
	} {
		_, err := herald(t, "tenants", "set", "acme", "--retention", spec)
		require.EqualError(t, err, want, spec)
	}

	acme := heraldJSON[tenant.Tenant](t, "tenants", "set", "acme", "--retention", "history=")
	require.Equal(t, tenant.Retention{Payloads: tenant.Period(36 * time.Hour), Inbox: tenant.Period(14 * 24 * time.Hour)}, acme.Retention,
		"history= is the platform's again")
	out, err = herald(t, "tenants", "show", "acme")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^history kept: +\(the platform's ledger.retention\)$`, out)
}

// The CLI checks a tenant's plan against the plans the running services
// use — the api publishes them when it starts — not against its own
// configuration, which may be none; a refusal names the plans it read.
// Not parallel: it sets the environment.
func TestTenantsCreateChecksThePlansTheServicesUse(t *testing.T) {
	n := heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
	own := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(own, []byte("plans:\n  trial:\n    description: Only this CLI's.\n"), 0o600))

	_, err := herald(t, "tenants", "create", "zarya", "--plan", "pilot", "--config", own)
	require.EqualError(t, err, `invalid tenant: plan: "pilot" is not a plan (known: enterprise, free, indie, startup, trial); `+
		`checked against the plans of `+own+`, as no service has published its plans to bucket plans`)

	var cfg app.Config
	cfg.NATS.URL, cfg.Services = n.Server.URL(), []string{"api"}
	cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Plans = tenant.Plans{"pilot": {Description: "A pilot customer."}}
	api, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, api.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, api.Stop(context.Background())) })

	out, err := herald(t, "tenants", "create", "zarya", "--plan", "pilot")
	require.NoError(t, err, "the api knows the plan, though this command has no config")
	require.Equal(t, "registered tenant zarya (plan pilot, active)\n", out)
	_, err = herald(t, "tenants", "create", "yuzhny", "--plan", "trial", "--config", own)
	host, _ := os.Hostname()
	require.ErrorContains(t, err, `invalid tenant: plan: "trial" is not a plan (known: enterprise, free, indie, pilot, startup); `+
		`checked against the plans the api on `+host+` published at `)
	require.ErrorContains(t, err, "(KV bucket plans)")
	_, err = herald(t, "tenants", "set", "zarya", "--plan", "trial", "--config", own)
	require.ErrorIs(t, err, tenant.ErrUnknownPlan, "changing a plan is checked the same way")
}
