package router

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// orderWorkflow is issue 34's purchase order workflow: remind the
// supplier, then escalate to the buyer, until the order is confirmed.
func orderWorkflow() Route {
	email, whatsapp, sms := event.ChannelEmail, event.ChannelWhatsApp, event.ChannelSMS
	wait := func() Step {
		return Step{Wait: &WaitStep{For: Duration(24 * time.Hour), UntilEvent: "order.confirmed"}}
	}
	return Route{Event: "order.created", Kind: event.KindPurchase, Document: notification.PurchaseOrder,
		Roles: []string{"supplier"}, CancelOn: []string{"order.cancelled"}, Steps: []Step{
			{Send: &SendStep{Channels: []event.Channel{email}}},
			wait(),
			{Send: &SendStep{Channels: []event.Channel{whatsapp}, Fallback: []event.Channel{sms}, Template: "po_reminder"}},
			wait(),
			{Send: &SendStep{Roles: []string{"buyer"}, Channels: []event.Channel{email}, Template: "po_unconfirmed"}},
		}}
}

// stockWorkflow is issue 34's low-stock workflow: throttled per SKU,
// digested per warehouse, held to the recipient's working hours.
func stockWorkflow() Route {
	return Route{Event: "inventory.low_stock", Template: "low_stock", Roles: []string{"warehouse"}, Steps: []Step{
		{Throttle: &ThrottleStep{Key: "{{.Stock.SKU}}", Limit: 1, Per: Duration(time.Hour)}},
		{Digest: &DigestStep{Key: "{{.Stock.Warehouse}}", Window: Duration(15 * time.Minute), MaxItems: 50}},
		{Window: &WindowStep{Days: []string{"mon", "tue", "wed", "thu", "fri", "sat"}, From: "08:00", To: "20:00",
			Timezone: "recipient", UnlessPriority: notification.PriorityCritical}},
		{Send: &SendStep{Channels: []event.Channel{event.ChannelSMS, event.ChannelWhatsApp}}},
	}}
}

// validateRoute is the problems Config.Validate finds in one route.
func validateRoute(t *testing.T, r Route) error {
	t.Helper()
	return Config{Routes: []Route{r}, Channels: event.Channels}.WithDefaults().Validate()
}

func TestIssueWorkflowsAreValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, validateRoute(t, orderWorkflow()))
	require.NoError(t, validateRoute(t, stockWorkflow()))
}

// Each row breaks one thing in a valid workflow; the problem names the
// route, the step index and the field.
func TestWorkflowProblemsNameRouteStepAndField(t *testing.T) {
	t.Parallel()
	order, stock := orderWorkflow, stockWorkflow
	steps := func(n int) []Step {
		out := []Step{{Send: &SendStep{}}}
		for range n - 1 {
			out = append(out, Step{Wait: &WaitStep{For: Duration(time.Hour)}})
		}
		return out
	}
	tests := []struct {
		name   string
		route  func() Route
		change func(r *Route)
		want   string
	}{
		{"two kinds", order, func(r *Route) { r.Steps[1].Send = &SendStep{} },
			"router.routes[0].steps[1]: a step is exactly one of send, wait, throttle, digest, window (got send and wait)"},
		{"no kind", order, func(r *Route) { r.Steps[1] = Step{} }, "router.routes[0].steps[1]: a step is exactly one of send, wait, throttle, digest, window (got none)"},
		{"too many steps", order, func(r *Route) { r.Steps = steps(21) }, "router.routes[0].steps: 21 steps; a workflow has at most 20"},
		{"no send", order, func(r *Route) { r.Steps = r.Steps[1:2] }, "router.routes[0].steps: a workflow needs at least one send"},

		{"unknown channel", order, func(r *Route) { r.Steps[0].Send.Channels = []event.Channel{"pigeon"} },
			`router.routes[0].steps[0].send.channels: "pigeon" is not a channel`},
		{"unknown fallback", order, func(r *Route) { r.Steps[2].Send.Fallback = []event.Channel{"fax"} },
			`router.routes[0].steps[2].send.fallback: "fax" is not a channel`},
		{"fallback twice", order, func(r *Route) { r.Steps[2].Send.Fallback = []event.Channel{event.ChannelSMS, event.ChannelWhatsApp} },
			`router.routes[0].steps[2].send.fallback: "whatsapp" is named twice`},
		{"channel twice", order, func(r *Route) { r.Steps[0].Send.Channels = []event.Channel{event.ChannelEmail, event.ChannelEmail} },
			`router.routes[0].steps[0].send.channels: "email" is named twice`},
		{"no channels anywhere", order, func(r *Route) { r.Steps[0].Send.Channels = nil },
			"router.routes[0].steps[0].send.channels: at least one channel or a fallback is required when the route has none"},
		{"template", order, func(r *Route) { r.Steps[2].Send.Template = "PO Reminder" },
			`router.routes[0].steps[2].send.template: "PO Reminder" must be 1-64 lowercase letters`},
		{"role", order, func(r *Route) { r.Steps[4].Send.Roles = []string{"the buyer"} },
			`router.routes[0].steps[4].send.roles: "the buyer" is not a role`},

		{"wait without a bound", order, func(r *Route) { r.Steps[1].Wait = &WaitStep{} },
			"router.routes[0].steps[1].wait: needs a bound: for, until or until_event"},
		{"wait past what is kept", order, func(r *Route) { r.Steps[1].Wait.For = Duration(61 * 24 * time.Hour) },
			"router.routes[0].steps[1].wait.for: 1464h0m0s must be more than 0 and at most 60 days"},
		{"negative wait", order, func(r *Route) { r.Steps[1].Wait.For = Duration(-time.Hour) },
			"router.routes[0].steps[1].wait.for: -1h0m0s must be more than 0"},
		{"until not a time", order, func(r *Route) { r.Steps[1].Wait.Until = "tomorrow" },
			`router.routes[0].steps[1].wait.until: "tomorrow" is neither an RFC 3339 time`},
		{"until template", order, func(r *Route) { r.Steps[1].Wait.Until = "{{.Order.DueDate" },
			"router.routes[0].steps[1].wait.until: does not parse"},
		{"until_event not an event", order, func(r *Route) { r.Steps[1].Wait.UntilEvent = "confirmed" },
			`router.routes[0].steps[1].wait.until_event: event type "confirmed": want <family>.<name>`},
		{"until_event not of an order", order, func(r *Route) { r.Steps[1].Wait.UntilEvent = "inventory.low_stock" },
			`router.routes[0].steps[1].wait.until_event: "inventory.low_stock": only order events end a run`},
		{"until_event the route's own", order, func(r *Route) { r.Steps[3].Wait.UntilEvent = "order.created" },
			`router.routes[0].steps[3].wait.until_event: "order.created" is the route's own event`},
		{"until_event on a stock route", stock, func(r *Route) {
			r.Steps = append(r.Steps, Step{Wait: &WaitStep{For: Duration(time.Hour), UntilEvent: "order.confirmed"}})
		}, `router.routes[0].steps[4].wait.until_event: "order.confirmed": only a route of order events has an order`},
		{"until_status read not on inbox", order, func(r *Route) { r.Steps[1].Wait.UntilStatus = "read" },
			"router.routes[0].steps[1].wait.until_status: read needs the send it follows (steps[0]) to be on channel inbox"},
		{"until_status read after the route's channels", order, func(r *Route) {
			r.Channels, r.Steps[0].Send.Channels = []event.Channel{event.ChannelEmail}, nil
			r.Steps[1].Wait.UntilStatus = "read"
		}, "router.routes[0].steps[1].wait.until_status: read needs the send it follows (steps[0]) to be on channel inbox"},
		{"until_status read after another send", order, func(r *Route) {
			r.Steps[0].Send.Channels = []event.Channel{event.ChannelInbox}
			r.Steps[3].Wait.UntilStatus = "read"
		}, "router.routes[0].steps[3].wait.until_status: read needs the send it follows (steps[2]) to be on channel inbox"},
		{"until_status read before any send", order, func(r *Route) {
			r.Steps[0], r.Steps[1] = r.Steps[1], r.Steps[0]
			r.Steps[0].Wait.UntilStatus = "read"
		}, "router.routes[0].steps[0].wait.until_status: no send before this wait whose notification could be read"},
		{"until_status unknown", order, func(r *Route) { r.Steps[1].Wait.UntilStatus = "opened" },
			`router.routes[0].steps[1].wait.until_status: "opened" must be delivered or read`},
		{"until_status before any send", order, func(r *Route) {
			r.Steps[0], r.Steps[1] = r.Steps[1], r.Steps[0]
			r.Steps[0].Wait.UntilStatus = "delivered"
		},
			"router.routes[0].steps[0].wait.until_status: no send before this wait"},

		{"throttle key missing", stock, func(r *Route) { r.Steps[0].Throttle.Key = "" }, "router.routes[0].steps[0].throttle.key: is required"},
		{"throttle key too long", stock, func(r *Route) { r.Steps[0].Throttle.Key = "{{.Stock.SKU}}" + strings.Repeat("x", 243) },
			"router.routes[0].steps[0].throttle.key: 257 bytes; at most 256"},
		{"throttle key control", stock, func(r *Route) { r.Steps[0].Throttle.Key = "{{.Stock.SKU}}\x1b[2J" },
			"router.routes[0].steps[0].throttle.key: holds a control character (U+001B at byte 14)"},
		{"throttle key does not parse", stock, func(r *Route) { r.Steps[0].Throttle.Key = "{{.Stock.SKU" },
			"router.routes[0].steps[0].throttle.key: does not parse"},
		{"throttle limit", stock, func(r *Route) { r.Steps[0].Throttle.Limit = -1 }, "router.routes[0].steps[0].throttle.limit: -1 must be 1 or more"},
		{"throttle without a period", stock, func(r *Route) { r.Steps[0].Throttle.Per = 0 },
			"router.routes[0].steps[0].throttle.per: 0s must be more than 0 and at most 30 days"},
		{"throttle period too long", stock, func(r *Route) { r.Steps[0].Throttle.Per = Duration(31 * 24 * time.Hour) },
			"router.routes[0].steps[0].throttle.per: 744h0m0s must be more than 0 and at most 30 days"},

		{"digest key", stock, func(r *Route) { r.Steps[1].Digest.Key = "{{if}}" }, "router.routes[0].steps[1].digest.key: does not parse"},
		{"digest never closes", stock, func(r *Route) { r.Steps[1].Digest.Window = 0 }, "router.routes[0].steps[1].digest: needs a window or a cron to close"},
		{"digest window and cron", stock, func(r *Route) { r.Steps[1].Digest.Cron = "0 8 * * *" },
			"router.routes[0].steps[1].digest: has both a window and a cron: give one"},
		{"digest window too long", stock, func(r *Route) { r.Steps[1].Digest.Window = Duration(31 * 24 * time.Hour) },
			"router.routes[0].steps[1].digest.window: 744h0m0s must be more than 0 and at most 30 days"},
		{"digest negative window", stock, func(r *Route) { r.Steps[1].Digest.Window = Duration(-time.Minute) },
			"router.routes[0].steps[1].digest.window: -1m0s must be more than 0"},
		{"digest too many items", stock, func(r *Route) { r.Steps[1].Digest.MaxItems = 1001 },
			"router.routes[0].steps[1].digest.max_items: 1001 must be between 0 (the most, 1,000) and 1000"},
		{"digest negative items", stock, func(r *Route) { r.Steps[1].Digest.MaxItems = -1 },
			"router.routes[0].steps[1].digest.max_items: -1 must be between 0"},
		{"cron of four fields", stock, func(r *Route) { r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron = 0, "0 8 * *" },
			`router.routes[0].steps[1].digest.cron: "0 8 * *" must be five fields`},
		{"cron with seconds", stock, func(r *Route) { r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron = 0, "0 0 8 * * *" },
			`router.routes[0].steps[1].digest.cron: "0 0 8 * * *" must be five fields`},
		{"cron descriptor", stock, func(r *Route) { r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron = 0, "@daily" },
			`router.routes[0].steps[1].digest.cron: "@daily" must be five fields`},
		{"cron with its own zone", stock, func(r *Route) { r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron = 0, "TZ=UTC 8 * * *" },
			`router.routes[0].steps[1].digest.cron: "TZ=UTC 8 * * *" does not parse`},
		{"cron control", stock, func(r *Route) { r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron = 0, "0 8 * * \x1b[2J" },
			"router.routes[0].steps[1].digest.cron: holds a control character (U+001B at byte 8)"},
		{"cron out of range", stock, func(r *Route) { r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron = 0, "0 25 * * *" },
			`router.routes[0].steps[1].digest.cron: "0 25 * * *" does not parse`},
		{"cron that never fires", stock, func(r *Route) { r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron = 0, "0 0 30 2 *" },
			`router.routes[0].steps[1].digest.cron: "0 0 30 2 *" never fires`},
		{"cron zone", stock, func(r *Route) {
			r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron, r.Steps[1].Digest.Timezone = 0, "0 8 * * *", "Mars/Olympus_Mons"
		}, `router.routes[0].steps[1].digest.timezone: "Mars/Olympus_Mons" is not an IANA time zone such as Europe/Moscow, or recipient`},
		{"zone without a cron", stock, func(r *Route) { r.Steps[1].Digest.Timezone = "Europe/Madrid" },
			"router.routes[0].steps[1].digest.timezone: applies to a cron"},

		{"window day", stock, func(r *Route) { r.Steps[2].Window.Days = []string{"monday"} },
			`router.routes[0].steps[2].window.days: "monday" is not a day (want some of mon, tue, wed, thu, fri, sat, sun)`},
		{"window day twice", stock, func(r *Route) { r.Steps[2].Window.Days = []string{"mon", "tue", "mon"} },
			`router.routes[0].steps[2].window.days: "mon" is named twice`},
		{"window from", stock, func(r *Route) { r.Steps[2].Window.From = "8am" },
			`router.routes[0].steps[2].window.from: "8am" must be a local time HH:MM or HH:MM:SS`},
		{"window to missing", stock, func(r *Route) { r.Steps[2].Window.To = "" },
			`router.routes[0].steps[2].window.to: "" must be a local time HH:MM or HH:MM:SS`},
		{"window to out of range", stock, func(r *Route) { r.Steps[2].Window.To = "24:00" },
			`router.routes[0].steps[2].window.to: "24:00" must be a local time`},
		{"window never open", stock, func(r *Route) { r.Steps[2].Window.To = "08:00:00" },
			`router.routes[0].steps[2].window.to: "08:00:00" is when the window opens too`},
		{"window zone", stock, func(r *Route) { r.Steps[2].Window.Timezone = "Local" },
			`router.routes[0].steps[2].window.timezone: "Local" is not an IANA time zone`},
		{"window priority", stock, func(r *Route) { r.Steps[2].Window.UnlessPriority = "urgent" },
			`router.routes[0].steps[2].window.unless_priority: "urgent" is not a priority`},

		{"too many days", stock, func(r *Route) { r.Steps[2].Window.Days = slices.Repeat([]string{"mon"}, 17) },
			"router.routes[0].steps[2].window.days: 17 items; at most 16"},
		{"too many roles", order, func(r *Route) { r.Steps[4].Send.Roles = slices.Repeat([]string{"buyer"}, 17) },
			"router.routes[0].steps[4].send.roles: 17 items; at most 16"},
		{"a role too long", order, func(r *Route) { r.Steps[4].Send.Roles = []string{strings.Repeat("b", 257)} },
			"router.routes[0].steps[4].send.roles: 257 bytes; at most 256"},
		{"until too long", order, func(r *Route) { r.Steps[1].Wait.Until = strings.Repeat("9", 300) },
			"router.routes[0].steps[1].wait.until: 300 bytes; at most 256"},
		{"too many cancel_on", order, func(r *Route) { r.CancelOn = slices.Repeat([]string{"order.cancelled"}, 17) },
			"router.routes[0].cancel_on: 17 events; at most 16, each of at most 256 bytes"},
		{"a cancel_on too long", order, func(r *Route) { r.CancelOn = []string{"order." + strings.Repeat("x", 251)} },
			"router.routes[0].cancel_on: 1 events; at most 16, each of at most 256 bytes"},
		{"cancel_on twice", order, func(r *Route) { r.CancelOn = []string{"order.cancelled", "order.cancelled"} },
			`router.routes[0].cancel_on: "order.cancelled" is named twice`},
		{"cancel_on not an event", order, func(r *Route) { r.CancelOn = []string{"order"} },
			`router.routes[0].cancel_on: event type "order": want <family>.<name>`},
		{"cancel_on not of an order", order, func(r *Route) { r.CancelOn = []string{"inventory.restocked"} },
			`router.routes[0].cancel_on: "inventory.restocked": only order events end a run`},
		{"cancel_on the route's own", order, func(r *Route) { r.CancelOn = []string{"order.created"} },
			`router.routes[0].cancel_on: "order.created" is the route's own event`},
		{"cancel_on on a stock route", stock, func(r *Route) { r.CancelOn = []string{"order.cancelled"} },
			`router.routes[0].cancel_on: "order.cancelled": only a route of order events has an order`},
		{"cancel_on without steps", order, func(r *Route) { r.Steps, r.Channels = nil, []event.Channel{event.ChannelEmail} },
			"router.routes[0].cancel_on: ends a route's runs, and a route without steps has none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.route()
			tt.change(&r)
			err := validateRoute(t, r)
			require.Error(t, err)
			problems := strings.Split(err.Error(), "\n")
			require.True(t, slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, tt.want) }),
				"want a problem starting %q, got:\n%s", tt.want, err)
		})
	}
}

// What the rules allow besides the issue's examples.
func TestWorkflowVariantsAreValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		route  func() Route
		change func(r *Route)
	}{
		{"a send uses the route's channels", orderWorkflow, func(r *Route) {
			r.Channels, r.Steps[0].Send.Channels = []event.Channel{event.ChannelEmail}, nil
		}},
		{"a send uses the route's fallback", orderWorkflow, func(r *Route) {
			r.Fallback, r.Steps[0].Send.Channels = []event.Channel{event.ChannelEmail}, nil
		}},
		{"until a time", orderWorkflow, func(r *Route) { r.Steps[1].Wait = &WaitStep{Until: "2027-01-02T15:04:05+01:00"} }},
		{"until a template", orderWorkflow, func(r *Route) { r.Steps[1].Wait = &WaitStep{Until: "{{.Order.Date}}"} }},
		{"until delivered", orderWorkflow, func(r *Route) { r.Steps[1].Wait.UntilStatus = "delivered" }},
		{"a cron at the recipient's 08:00", stockWorkflow, func(r *Route) {
			r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron, r.Steps[1].Digest.Timezone = 0, "0 8 * * 1-5", "recipient"
		}},
		{"a cron in a zone", stockWorkflow, func(r *Route) {
			r.Steps[1].Digest.Window, r.Steps[1].Digest.Cron, r.Steps[1].Digest.Timezone = 0, "30 7 1 * *", "America/New_York"
		}},
		{"a window overnight, to the second", stockWorkflow, func(r *Route) {
			r.Steps[2].Window.From, r.Steps[2].Window.To, r.Steps[2].Window.Timezone = "22:00:30", "06:00", "Asia/Tokyo"
		}},
		{"a window every day", stockWorkflow, func(r *Route) { r.Steps[2].Window.Days, r.Steps[2].Window.UnlessPriority = nil, "" }},
		{"a throttle of the default limit", stockWorkflow, func(r *Route) { r.Steps[0].Throttle.Limit = 0 }},
		{"sixty days' wait", orderWorkflow, func(r *Route) { r.Steps[1].Wait.For = maxWait }},
		{"cancelled on two events", orderWorkflow, func(r *Route) { r.CancelOn = append(r.CancelOn, "order.rejected") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.route()
			tt.change(&r)
			require.NoError(t, validateRoute(t, r))
		})
	}
}

// A throttle without a limit lets one run per key and period on, as its
// doc says; the caller's route is left as it was.
func TestThrottleLimitDefaultsToOne(t *testing.T) {
	t.Parallel()
	r := stockWorkflow()
	r.Steps[0].Throttle.Limit = 0
	got := Config{Routes: []Route{r}}.WithDefaults().Routes[0]
	require.Equal(t, 1, got.Steps[0].Throttle.Limit)
	require.Equal(t, 0, r.Steps[0].Throttle.Limit)
}

// A wait until_status: read follows a send that may write an inbox item:
// on inbox, by the step's channels or fallback or the route's.
func TestUntilStatusReadFollowsAnInboxSend(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(r *Route){
		"step's channels": func(r *Route) { r.Steps[0].Send.Channels = []event.Channel{event.ChannelEmail, event.ChannelInbox} },
		"step's fallback": func(r *Route) { r.Steps[0].Send.Fallback = []event.Channel{event.ChannelInbox} },
		"route's channels": func(r *Route) {
			r.Channels, r.Steps[0].Send.Channels = []event.Channel{event.ChannelInbox}, nil
		},
	} {
		r := orderWorkflow()
		change(&r)
		r.Steps[1].Wait.UntilStatus = "read"
		require.NoError(t, validateRoute(t, r), name)
	}
}
