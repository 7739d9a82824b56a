package tenant_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/tenant"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

func valid() tenant.Tenant {
	return tenant.Tenant{
		ID:        "acme",
		Name:      "Acme Logistics",
		Plan:      "startup",
		Status:    tenant.Active,
		From:      "Acme Orders <orders@acme.example>",
		Providers: []string{"acme-ses", "sendgrid"},
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	plans := tenant.BuiltinPlans()
	tests := []struct {
		name string
		edit func(*tenant.Tenant)
		want []string // the problems, each naming its field; none: valid
	}{
		{"valid", func(*tenant.Tenant) {}, nil},
		{"bare address", func(x *tenant.Tenant) { x.From = "orders@acme.example" }, nil},
		{"no from, no providers", func(x *tenant.Tenant) { x.From, x.Providers = "", nil }, nil},
		{"id with a dot", func(x *tenant.Tenant) { x.ID = "acme.eu" },
			[]string{`id: "acme.eu" is not a tenant id (1 to 64 letters, digits, '-' or '_')`}},
		{"no id", func(x *tenant.Tenant) { x.ID = "" },
			[]string{`id: "" is not a tenant id (1 to 64 letters, digits, '-' or '_')`}},
		{"unknown plan", func(x *tenant.Tenant) { x.Plan = "gold" },
			[]string{`plan: "gold" is not a plan (known: enterprise, free, indie, startup)`}},
		{"unknown status", func(x *tenant.Tenant) { x.Status = "paused" },
			[]string{`status: "paused" is not a status (want active or suspended)`}},
		{"from not an address", func(x *tenant.Tenant) { x.From = "Acme Orders" },
			[]string{`from: "Acme Orders" is not one address like "Acme <orders@acme.example>" (mail: no angle-addr)`}},
		{"two addresses", func(x *tenant.Tenant) { x.From = "a@acme.example, b@acme.example" },
			[]string{`from: "a@acme.example, b@acme.example" is not one address like "Acme <orders@acme.example>" (mail: expected single address, got ", b@acme.example")`}},
		{"provider with a space", func(x *tenant.Tenant) { x.Providers = []string{"acme-ses", "send grid"} },
			[]string{`providers[1]: "send grid" is not a provider name (1 to 64 letters, digits, '-' or '_')`}},
		{"provider twice", func(x *tenant.Tenant) { x.Providers = []string{"ses", "sendgrid", "ses"} },
			[]string{`providers[2]: "ses" is already in the chain`}},
		{"logo over http", func(x *tenant.Tenant) { x.LogoURL = "http://acme.example/logo.png" },
			[]string{`logo_url: "http://acme.example/logo.png" is not an https URL (mail clients block others)`}},
		{"inbox origins", func(x *tenant.Tenant) {
			x.InboxOrigins = []string{"https://app.acme.example", "http://localhost:3000", "https://acme.example:8443"}
		}, nil},
		{"inbox origins wrong", func(x *tenant.Tenant) {
			x.InboxOrigins = []string{"https://app.acme.example", "http://app.acme.example", "https://acme.example/inbox",
				"app.acme.example", "https://App.acme.example", "ftp://acme.example", "https://app.acme.example"}
		}, []string{
			`inbox_origins[1]: "http://app.acme.example" is not an origin like https://app.acme.example (https; http only for localhost)`,
			`inbox_origins[2]: "https://acme.example/inbox" is not an origin like https://app.acme.example (nothing after the host and port)`,
			`inbox_origins[3]: "app.acme.example" is not an origin like https://app.acme.example (scheme://host[:port])`,
			`inbox_origins[4]: "https://App.acme.example" is not an origin like https://app.acme.example (lowercase, as a browser sends it)`,
			`inbox_origins[5]: "ftp://acme.example" is not an origin like https://app.acme.example (https; http only for localhost)`,
			`inbox_origins[6]: "https://app.acme.example" is listed twice`,
		}},
		{"too many inbox origins", func(x *tenant.Tenant) {
			for i := range tenant.MaxInboxOrigins + 1 {
				x.InboxOrigins = append(x.InboxOrigins, fmt.Sprintf("https://a%d.acme.example", i))
			}
		}, []string{`inbox_origins: 21 origins; at most 20`}},
		{"colour by name", func(x *tenant.Tenant) { x.Colour = "red;background:url(x)" },
			[]string{`colour: "red;background:url(x)" is not a colour like #1f4e79`}},
		{"name with a newline", func(x *tenant.Tenant) { x.Name = "Acme\nLogistics" },
			[]string{`name: "Acme\nLogistics" holds a control character (U+000A at byte 4)`}},
		{"name with a line separator", func(x *tenant.Tenant) { x.Name = "Acme\u2028Logistics" },
			[]string{`name: "Acme\u2028Logistics" holds a control character (U+2028 at byte 4)`}},
		{"from with a C1 control", func(x *tenant.Tenant) { x.From = "Acme\u009b2J <orders@acme.example>" },
			[]string{`from: "Acme\u009b2J <orders@acme.example>" is not one address like "Acme <orders@acme.example>" (holds a control character (U+009B at byte 4))`}},
		{"from with an encoded escape", func(x *tenant.Tenant) { x.From = "=?utf-8?q?Acme=1B=5B2J?= <orders@acme.example>" },
			[]string{`from: "=?utf-8?q?Acme=1B=5B2J?= <orders@acme.example>" is not one address like "Acme <orders@acme.example>" (its name, decoded, holds a control character (U+001B at byte 4))`}},
		{"logo with a C1 control", func(x *tenant.Tenant) { x.LogoURL = "https://acme.example/\u009blogo.png" },
			[]string{`logo_url: "https://acme.example/\u009blogo.png" is not an https URL (mail clients block others)`}},
		{"everything wrong at once", func(x *tenant.Tenant) { x.ID, x.Plan, x.Status = "a b", "", "" }, []string{
			`id: "a b" is not a tenant id (1 to 64 letters, digits, '-' or '_')`,
			`plan: "" is not a plan (known: enterprise, free, indie, startup)`,
			`status: "" is not a status (want active or suspended)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := valid()
			tt.edit(&x)
			err := x.Validate(plans)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			var verr *tenant.ValidationError
			require.ErrorAs(t, err, &verr)
			require.Equal(t, tt.want, verr.Problems)
			require.Equal(t, "invalid tenant: "+strings.Join(tt.want, "; "), err.Error())
		})
	}
}

func TestPlansFromConfig(t *testing.T) {
	t.Parallel()
	configured := tenant.Plans{
		"startup": {},                                        // named, nothing changed
		"free":    {Description: "Ten emails a day."},        // overridden
		"partner": {Description: "Resellers, billed apart."}, // added
	}
	plans := configured.WithDefaults()
	require.Equal(t, []string{"enterprise", "free", "indie", "partner", "startup"}, plans.Names())
	require.Equal(t, tenant.BuiltinPlans()["startup"], plans["startup"])
	require.Equal(t, "Ten emails a day.", plans["free"].Description)
	require.Equal(t, "Resellers, billed apart.", plans["partner"].Description)
	require.NoError(t, plans.Validate())

	x := valid()
	x.Plan = "partner"
	require.NoError(t, x.Validate(plans))
	require.ErrorContains(t, x.Validate(tenant.BuiltinPlans()), `plan: "partner" is not a plan (known: enterprise, free, indie, startup)`)

	require.Len(t, tenant.Plans(nil).WithDefaults(), 4, "no plans: section, the built-in plans")
}

func TestPlansValidateNamesTheField(t *testing.T) {
	t.Parallel()
	plans := tenant.Plans{"gold plan": {}, "silver.eu": {}}.WithDefaults()
	err := plans.Validate()
	require.EqualError(t, err, `plans.gold plan: "gold plan" is not a plan name (1 to 64 letters, digits, '-' or '_')`+"\n"+
		`plans.silver.eu: "silver.eu" is not a plan name (1 to 64 letters, digits, '-' or '_')`)
}

// A config file changes one setting of a built-in plan and keeps the rest;
// each limit reads as the plan says, and a setting out of range is named
// as the config file names it.
func TestPlanLimits(t *testing.T) {
	t.Parallel()
	two := 2
	plans := tenant.Plans{"free": {Burst: &two}, "partner": {}}.WithDefaults()
	perMinute, burst, limited := plans["free"].Rate()
	require.True(t, limited)
	require.Equal(t, []int{5, 2}, []int{perMinute, burst}, "the built-in rate, the configured burst")
	q, limited := plans["free"].Quota(event.ChannelEmail)
	require.True(t, limited)
	require.EqualValues(t, 100, q)
	_, limited = plans["free"].Quota(event.ChannelSMS)
	require.False(t, limited, "a channel left out has no quota")
	require.Equal(t, notification.PriorityLow, plans["free"].Cap(notification.PriorityCritical), "free traffic is low")
	require.Equal(t, notification.PriorityLow, plans["free"].Cap(notification.PriorityLow))

	perMinute, burst, _ = plans["startup"].Rate()
	require.Equal(t, []int{200, 200}, []int{perMinute, burst}, "a minute's worth of burst")
	_, _, limited = plans["enterprise"].Rate()
	require.False(t, limited)
	require.Equal(t, notification.PriorityCritical, plans["partner"].Cap(notification.PriorityCritical), "an added plan limits nothing")

	negative, zero := -1, 0
	bad := tenant.Plans{
		"x": {RatePerMinute: &negative, MonthlyQuota: map[event.Channel]int64{"fax": 3, event.ChannelSMS: 0}, MaxPriority: "urgent"},
		"y": {RatePerMinute: &zero, Burst: &two},
	}
	require.EqualError(t, bad.Validate(), strings.Join([]string{
		`plans.x.rate_per_minute: -1 is negative (0 is no limit)`,
		`plans.x.monthly_quota.fax: not a channel (email, sms, whatsapp, webhook, inbox, push)`,
		`plans.x.monthly_quota.sms: 0; a quota is at least 1 (leave the channel out for none)`,
		`plans.x.max_priority: "urgent" is not a priority (critical, normal, low)`,
		`plans.y.burst: a burst needs a rate_per_minute`,
	}, "\n"))
}

// A plan's weight is its tenants' share when they compete: enterprise 4,
// startup 2, the others 1, unless the config file says otherwise (a plan
// whose description it changes keeps its weight) — and a
// weight set keeps the plan's other settings. Out of range, it is named as
// the config file names it.
func TestPlanWeights(t *testing.T) {
	t.Parallel()
	three := 3
	plans := tenant.Plans{"indie": {Weight: &three}, "startup": {Description: "Ours."}, "partner": {}}.WithDefaults()
	shares := map[string]int{}
	for _, name := range plans.Names() {
		shares[name] = plans[name].Share()
	}
	require.Equal(t, map[string]int{"enterprise": 4, "startup": 2, "indie": 3, "free": 1, "partner": 1}, shares)
	perMinute, _, _ := plans["indie"].Rate()
	require.Equal(t, 50, perMinute, "the built-in rate kept")
	require.Equal(t, 1, tenant.Plan{}.Share(), "no plan: weight 1")

	zero, over := 0, tenant.MaxWeight+1
	bad := tenant.Plans{"x": {Weight: &zero}, "y": {Weight: &over}}.WithDefaults()
	require.EqualError(t, bad.Validate(), strings.Join([]string{
		`plans.x.weight: 0; a weight is 1 to 100 (leave it out for the plan's default)`,
		`plans.y.weight: 101; a weight is 1 to 100 (leave it out for the plan's default)`,
	}, "\n"))
	require.NoError(t, tenant.Plans{"x": {Weight: &three}}.WithDefaults().Validate())
}
