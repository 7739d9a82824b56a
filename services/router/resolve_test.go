package router

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

// fixed is a directory of acme's recipients, as a table test gives one.
type fixed struct {
	subscribers map[string]recipient.Subscriber
	accounts    map[string]recipient.Account
	topics      map[string][]string
	own         map[string]recipient.Choices
	defaults    recipient.Choices
	// devices are the subscribers with a push device.
	devices map[string]bool
}

func (f fixed) Subscriber(tenant, id string) (recipient.Subscriber, bool) {
	s, ok := f.subscribers[id]
	return s, ok && tenant == "acme"
}

func (f fixed) Account(tenant, id string) (recipient.Account, bool) {
	a, ok := f.accounts[id]
	return a, ok && tenant == "acme"
}

func (f fixed) Members(tenant, topic string) []string {
	if tenant != "acme" {
		return nil
	}
	return f.topics[topic]
}

func (f fixed) Choices(_, subscriber string) (own, defaults recipient.Choices) {
	return f.own[subscriber], f.defaults
}

func (f fixed) HasDevices(tenant, subscriber string) bool {
	return tenant == "acme" && f.devices[subscriber]
}

func acmeDirectory() fixed {
	return fixed{
		subscribers: map[string]recipient.Subscriber{
			"u-olga": {Tenant: "acme", ID: "u-olga", Name: "Ольга", Email: "olga@zarya.example", Phone: "+79161234567",
				WhatsApp: "+79161234567", Locale: "ru", Timezone: "Europe/Moscow"},
			"u-ivan": {Tenant: "acme", ID: "u-ivan", Name: "Иван", Email: "ivan@zarya.example", Timezone: "Europe/Moscow"},
			"u-pepe": {Tenant: "acme", ID: "u-pepe", Phone: "+34600111333"},
		},
		accounts: map[string]recipient.Account{
			"zarya": {Tenant: "acme", ID: "zarya", Members: []recipient.Member{
				{Subscriber: "u-olga", Roles: []string{"sales"}}, {Subscriber: "u-ivan", Roles: []string{"accounts_payable"}}}},
			"moloko": {Tenant: "acme", ID: "moloko", Members: []recipient.Member{{Subscriber: "u-ivan", Roles: []string{"sales"}}}},
		},
		topics:  map[string][]string{"warehouse-sevilla": {"u-olga", "u-pepe"}},
		own:     map[string]recipient.Choices{"u-olga": {"alerts": {event.ChannelSMS: false}, "documents": {event.ChannelEmail: false}}},
		devices: map[string]bool{"u-olga": true},
	}
}

// pushing is a deployment that pushes and texts, its low-stock alert sent
// on channels, falling back along fallback.
func pushing(channels, fallback []event.Channel) Config {
	routes := DefaultRoutes()
	for i, r := range routes {
		if r.Event == "inventory.low_stock" {
			routes[i].Channels, routes[i].Fallback = channels, fallback
		}
	}
	return Config{Channels: []event.Channel{event.ChannelSMS, event.ChannelPush}, Routes: routes}
}

func withRecipients(rs ...map[string]any) func(m map[string]any) {
	return func(m map[string]any) {
		list := make([]any, len(rs))
		for i, r := range rs {
			list[i] = r
		}
		m["data"].(map[string]any)["recipients"] = list
	}
}

func stockEvent(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, jsonUnmarshal(b, &m))
	edit(m)
	return jsonMarshal(t, m)
}

// unplanned lists each notification not planned as "recipient: reason".
func unplanned(t *testing.T, d Decision) []string {
	var out []string
	for _, n := range d.Unplanned {
		require.Equal(t, notification.Skipped, n.State)
		out = append(out, n.Recipient+" → "+n.Reason)
	}
	return out
}

// A subscriber named by id is reached where Herald knows to reach them,
// in their language, and the delivery says whose it is.
func TestASubscriberNamedIsReachedAtTheirAddress(t *testing.T) {
	t.Parallel()
	cfg := Config{Recipients: acmeDirectory()}.WithDefaults()
	d, err := cfg.decide(nil, sampleEvent(t, withRecipients(map[string]any{"role": "supplier", "subscriber": "u-olga"})), now)
	require.NoError(t, err)
	require.Equal(t, Routed, d.Outcome)
	require.Equal(t, []string{"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example"}, keys(d))
	olga := d.Renders[0].Deliveries[0]
	require.Equal(t, notification.Recipient{Name: "Ольга", Role: "supplier", Address: "olga@zarya.example",
		Subscriber: "u-olga", Timezone: "Europe/Moscow"}, olga.Recipient)
	require.Equal(t, "ru", olga.Locale, "the subscriber's locale before the order's")
	require.Empty(t, d.Unplanned, "documents are required: her preference does not hold them back")
}

func TestReferencesResolveToPeople(t *testing.T) {
	t.Parallel()
	sms := Config{Channels: []event.Channel{event.ChannelEmail, event.ChannelSMS, event.ChannelWhatsApp}}
	tests := []struct {
		name      string
		cfg       Config
		payload   func(t *testing.T) []byte
		outcome   Outcome
		keys      []string
		unplanned []string
	}{
		{
			name: "an account's members in the roles named",
			payload: func(t *testing.T) []byte {
				return sampleEvent(t, withRecipients(map[string]any{"role": "supplier", "account": "zarya", "account_roles": []string{"accounts_payable"}}))
			},
			outcome: Routed,
			keys:    []string{"acme:PO-2026-0042:1:purchase_order:email:ivan@zarya.example"},
		},
		{
			name: "an account's every member without roles",
			payload: func(t *testing.T) []byte {
				return sampleEvent(t, withRecipients(map[string]any{"role": "supplier", "account": "zarya"}))
			},
			outcome: Routed,
			keys: []string{"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
				"acme:PO-2026-0042:1:purchase_order:email:ivan@zarya.example"},
		},
		{
			name: "a party's account, when the event lists nobody in its role: the route's account roles",
			payload: func(t *testing.T) []byte {
				return sampleEvent(t, func(m map[string]any) {
					withRecipients()(m)
					order(m)["supplier"].(map[string]any)["account"] = "zarya"
				})
			},
			outcome: Routed,
			keys:    []string{"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example"},
		},
		{
			name: "an invoice reaches the buyer account's accounts payable",
			payload: func(t *testing.T) []byte {
				return sampleEvent(t, func(m map[string]any) {
					m["type"] = "order.invoiced"
					withRecipients()(m)
					order(m)["buyer"].(map[string]any)["account"] = "zarya"
				})
			},
			outcome: Routed,
			keys:    []string{"acme:PO-2026-0042:1:invoice:email:ivan@zarya.example"},
		},
		{
			name: "a party's account stands aside for the contacts the event lists in that role",
			payload: func(t *testing.T) []byte {
				return sampleEvent(t, func(m map[string]any) { order(m)["supplier"].(map[string]any)["account"] = "moloko" })
			},
			outcome: Routed,
			keys: []string{"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
				"acme:PO-2026-0042:1:purchase_order:email:compras@frutasdelsur.example"},
		},
		{
			name: "the same person inline and by reference hears once",
			payload: func(t *testing.T) []byte {
				return sampleEvent(t, func(m map[string]any) {
					list := m["data"].(map[string]any)["recipients"].([]any)
					m["data"].(map[string]any)["recipients"] = append(list, map[string]any{"role": "supplier", "subscriber": "u-olga"})
				})
			},
			outcome: Routed,
			keys: []string{"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
				"acme:PO-2026-0042:1:purchase_order:email:compras@frutasdelsur.example"},
		},
		{
			name: "a topic's members, on the channels they have, less those switched off",
			cfg:  sms,
			payload: func(t *testing.T) []byte {
				return stockEvent(t, withRecipients(map[string]any{"role": "warehouse", "topic": "warehouse-sevilla"}))
			},
			outcome: Routed,
			keys: []string{"acme:evt-2026-11-30-0100:0:low_stock:whatsapp:+79161234567",
				"acme:evt-2026-11-30-0100:0:low_stock:sms:+34600111333"},
			unplanned: []string{"+79161234567 → skipped: preference alerts.sms"},
		},
		{
			name: "a tenant's default holds where the subscriber chose nothing",
			cfg: func() Config {
				dir := acmeDirectory()
				dir.defaults = recipient.Choices{"alerts": {event.ChannelSMS: false, event.ChannelWhatsApp: false}}
				c := sms
				c.Recipients = dir
				return c
			}(),
			payload: func(t *testing.T) []byte {
				return stockEvent(t, withRecipients(map[string]any{"role": "warehouse", "subscriber": "u-pepe"}))
			},
			outcome:   NoRecipients,
			unplanned: []string{"+34600111333 → skipped: preference alerts.sms"},
		},
		{
			name: "push reaches a subscriber with a device; one without falls back to her phone",
			cfg:  pushing(nil, []event.Channel{event.ChannelPush, event.ChannelSMS}),
			payload: func(t *testing.T) []byte {
				return stockEvent(t, withRecipients(map[string]any{"role": "warehouse", "topic": "warehouse-sevilla"}))
			},
			outcome: Routed,
			keys: []string{"acme:evt-2026-11-30-0100:0:low_stock:push:u-olga",
				"acme:evt-2026-11-30-0100:0:low_stock:sms:+34600111333"},
			unplanned: []string{"+79161234567 → skipped: preference alerts.sms"},
		},
		{
			name: "push alone passes over a subscriber without a device",
			cfg:  pushing([]event.Channel{event.ChannelPush}, nil),
			payload: func(t *testing.T) []byte {
				return stockEvent(t, withRecipients(map[string]any{"role": "warehouse", "topic": "warehouse-sevilla"}))
			},
			outcome: Routed,
			keys:    []string{"acme:evt-2026-11-30-0100:0:low_stock:push:u-olga"},
		},
		{
			name: "an entry's channels limit a subscriber's",
			cfg:  sms,
			payload: func(t *testing.T) []byte {
				return stockEvent(t, withRecipients(map[string]any{"role": "warehouse", "subscriber": "u-olga", "channels": []string{"whatsapp"}}))
			},
			outcome: Routed,
			keys:    []string{"acme:evt-2026-11-30-0100:0:low_stock:whatsapp:+79161234567"},
		},
		{
			name: "references to nobody are recorded, each with what it named",
			cfg:  sms,
			payload: func(t *testing.T) []byte {
				return stockEvent(t, withRecipients(
					map[string]any{"role": "warehouse", "subscriber": "u-ghost"},
					map[string]any{"role": "warehouse", "account": "zarya", "account_roles": []string{"logistics"}},
					map[string]any{"role": "warehouse", "topic": "empty"},
					map[string]any{"role": "warehouse", "account": "nowhere"},
				))
			},
			outcome: NoRecipients,
			unplanned: []string{
				`subscriber "u-ghost" → skipped: no recipient: subscriber "u-ghost"`,
				`account "zarya" roles [logistics] → skipped: no recipient: account "zarya" roles [logistics]`,
				`topic "empty" → skipped: no recipient: topic "empty"`,
				`account "nowhere" → skipped: no recipient: account "nowhere"`,
			},
		},
		{
			name: "a party's account with nobody in the route's roles is recorded",
			payload: func(t *testing.T) []byte {
				return sampleEvent(t, func(m map[string]any) {
					m["type"] = "order.shipped"
					withRecipients()(m)
					order(m)["buyer"].(map[string]any)["account"] = "zarya"
				})
			},
			outcome:   NoRecipients,
			unplanned: []string{`account "zarya" roles [warehouse] → skipped: no recipient: account "zarya" roles [warehouse]`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			if cfg.Recipients == nil {
				cfg.Recipients = acmeDirectory()
			}
			cfg = cfg.WithDefaults()
			require.NoError(t, cfg.Validate())
			d, err := cfg.decide(nil, tt.payload(t), now)
			require.NoError(t, err)
			require.Equal(t, tt.outcome, d.Outcome)
			require.Equal(t, tt.keys, keys(d))
			require.Equal(t, tt.unplanned, unplanned(t, d))
		})
	}
}

// The records the directory lacks are named, for the router to read them
// from their buckets before planning again.
func TestWhatTheDirectoryLacksIsNamed(t *testing.T) {
	t.Parallel()
	cfg := Config{Recipients: acmeDirectory()}.WithDefaults()
	d, err := cfg.decide(nil, sampleEvent(t, withRecipients(
		map[string]any{"role": "supplier", "subscriber": "u-new"},
		map[string]any{"role": "supplier", "account": "new-co"},
		map[string]any{"role": "supplier", "subscriber": "u-olga"},
	)), now)
	require.NoError(t, err)
	require.Equal(t, []lookup{{"subscriber", "u-new"}, {"account", "new-co"}}, d.missing)
}

// References are bounded as entries are: an event cannot make the router
// plan for hundreds of thousands.
func TestReferencesResolveToABoundedNumberOfPeople(t *testing.T) {
	t.Parallel()
	dir := acmeDirectory()
	big := make([]string, 41)
	for i := range big {
		big[i] = "u-olga"
	}
	dir.topics["big"] = big
	cfg := Config{Recipients: dir, MaxRecipients: 2}.WithDefaults()
	d, err := cfg.decide(nil, sampleEvent(t, withRecipients(map[string]any{"role": "supplier", "topic": "big"})), now)
	require.EqualError(t, err, "data.recipients: the subscribers, accounts and topics named are 41 people, more than 40 (20 × router.max_recipients)")
	require.Equal(t, Invalid, d.Outcome)

	dir.topics["big"] = big[:40]
	_, err = cfg.decide(nil, sampleEvent(t, withRecipients(map[string]any{"role": "supplier", "topic": "big"})), now)
	require.NoError(t, err)
}

func TestARouteNamesAccountRolesItCanUse(t *testing.T) {
	t.Parallel()
	bad := Config{Routes: []Route{
		{Event: "order.created", Document: "purchase_order", Roles: []string{"supplier"}, AccountRoles: []string{"Sales Team"}, Channels: []event.Channel{event.ChannelEmail}},
		{Event: "inventory.low_stock", Template: "low_stock", Roles: []string{"warehouse"}, AccountRoles: []string{"sales"}, Channels: []event.Channel{event.ChannelSMS}},
	}}.WithDefaults()
	err := bad.Validate()
	require.ErrorContains(t, err, `router.routes[0].account_roles: "sales team" is not a role`)
	require.ErrorContains(t, err, "router.routes[1].account_roles: the route wants no role an order party plays")
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func jsonMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
