package router

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

var now = time.Date(2026, 11, 30, 9, 0, 1, 0, time.UTC)

// maxPayload is the NATS server's default max payload.
const maxPayload = 1 << 20

func sampleEvent(t testing.TB, edit func(m map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	if edit != nil {
		edit(m)
	}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	return b
}

func order(m map[string]any) map[string]any {
	return m["data"].(map[string]any)["order"].(map[string]any)
}

// keys lists every planned delivery's dedupe key: those sent now, then
// those waiting for each document.
func keys(d Decision) []string {
	var out []string
	for _, del := range d.Deliveries {
		out = append(out, del.DedupeKey)
	}
	for _, r := range d.Renders {
		for _, del := range r.Deliveries {
			out = append(out, del.DedupeKey)
		}
	}
	return out
}

func TestDecideSample(t *testing.T) {
	t.Parallel()
	d, err := Config{}.WithDefaults().decide(nil, sampleEvent(t, nil), now)
	require.NoError(t, err)
	require.Equal(t, Routed, d.Outcome)
	require.Equal(t, []string{
		"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
		"acme:PO-2026-0042:1:purchase_order:email:compras@frutasdelsur.example",
	}, keys(d))
	require.Equal(t, 0, d.Skipped, "the default route sends documents by email only")

	require.Empty(t, d.Deliveries, "every delivery waits for the purchase order")
	require.Len(t, d.Renders, 1)
	r := d.Renders[0]
	require.Equal(t, "purchase_order", r.Type)
	require.Equal(t, "acme/PO-2026-0042/purchase_order-r1.pdf", r.Object)
	require.Equal(t, "es", r.Locale, "the document speaks the order's language")
	require.Equal(t, "Кефир 0,5 л", r.Order.Lines[1].Description)
	require.Equal(t, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), r.Date, "the event's time: a deterministic PDF")
	olga := r.Deliveries[0]
	require.Equal(t, notification.ID(olga.DedupeKey), olga.ID)
	require.Equal(t, "ru", olga.Locale, "the recipient's locale wins")
	require.Equal(t, "es", r.Deliveries[1].Locale, "else the order's")
	require.Equal(t, notification.PriorityNormal, olga.Priority)
	require.Equal(t, "purchase_order", olga.Template)
	require.Equal(t, &notification.Document{Type: "purchase_order", Object: r.Object}, olga.Document)
	require.Equal(t, notification.Recipient{Name: "Ольга Петрова", Role: "supplier", Address: "olga@zarya.example"}, olga.Recipient)
	require.Equal(t, "Frutas del Sur S.L.", olga.Order.Buyer)
	require.Equal(t, event.Decimal("183.48"), olga.Order.Totals.Gross)
	require.Equal(t, "notify.email.normal.acme", notification.Subject(olga.Channel, olga.Priority, olga.Tenant))
}

func TestDecideRoutes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		edit    func(m map[string]any)
		outcome Outcome
		keys    []string
		skipped int
	}{
		{
			name:    "a revision is a new notification",
			edit:    func(m map[string]any) { m["type"] = "order.updated"; order(m)["revision"] = 2 },
			outcome: Routed,
			keys: []string{
				"acme:PO-2026-0042:2:purchase_order:email:olga@zarya.example",
				"acme:PO-2026-0042:2:purchase_order:email:compras@frutasdelsur.example",
			},
		},
		{
			name:    "an invoice for the same order is a different notification",
			edit:    func(m map[string]any) { m["type"] = "order.invoiced" },
			outcome: Routed,
			keys:    []string{"acme:PO-2026-0042:1:invoice:email:compras@frutasdelsur.example"},
		},
		{
			name:    "a sales order goes to the customer's contacts, not a supplier",
			edit:    func(m map[string]any) { order(m)["kind"] = "sales" },
			outcome: NoRecipients,
		},
		{
			name:    "a type no route mentions is unrouted",
			edit:    func(m map[string]any) { m["type"] = "order.cancelled" },
			outcome: Unrouted,
		},
		{
			name: "a kind no route covers is unrouted",
			cfg: Config{Routes: []Route{{Event: "order.created", Kind: event.KindSales, Document: "sales_order",
				Channels: []event.Channel{event.ChannelEmail}}}},
			outcome: Unrouted,
		},
		{
			name: "channels this deployment does not deliver on are skipped and counted",
			cfg: Config{Routes: []Route{{Event: "order.created", Document: "purchase_order",
				Channels: []event.Channel{event.ChannelEmail, event.ChannelWhatsApp}}}},
			outcome: Routed,
			keys: []string{
				"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
				"acme:PO-2026-0042:1:purchase_order:email:compras@frutasdelsur.example",
			},
			skipped: 1,
		},
		{
			name: "deployed channels fan out per channel",
			cfg: Config{Channels: []event.Channel{event.ChannelEmail, event.ChannelWhatsApp},
				Routes: []Route{{Event: "order.created", Document: "purchase_order", Roles: []string{"SUPPLIER"},
					Channels: []event.Channel{event.ChannelEmail, event.ChannelWhatsApp}, Priority: notification.PriorityCritical}}},
			outcome: Routed,
			keys: []string{
				"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
				"acme:PO-2026-0042:1:purchase_order:whatsapp:+79990001122",
			},
		},
		{
			name: "two routes reaching one person send once",
			cfg: Config{Routes: []Route{
				{Event: "order.created", Document: "purchase_order", Roles: []string{"supplier"}, Channels: []event.Channel{event.ChannelEmail}},
				{Event: "order.created", Document: "purchase_order", Channels: []event.Channel{event.ChannelEmail}},
			}},
			outcome: Routed,
			keys: []string{
				"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
				"acme:PO-2026-0042:1:purchase_order:email:compras@frutasdelsur.example",
			},
		},
		{
			name: "addresses are compared in lower case",
			edit: func(m map[string]any) {
				m["data"].(map[string]any)["recipients"].([]any)[0].(map[string]any)["email"] = "Olga@Zarya.Example"
			},
			outcome: Routed,
			keys: []string{
				"acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
				"acme:PO-2026-0042:1:purchase_order:email:compras@frutasdelsur.example",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg.WithDefaults()
			require.NoError(t, cfg.Validate())
			d, err := cfg.decide(nil, sampleEvent(t, tt.edit), now)
			require.NoError(t, err)
			require.Equal(t, tt.outcome, d.Outcome)
			require.Equal(t, tt.keys, keys(d))
			require.Equal(t, tt.skipped, d.Skipped)
		})
	}
}

func TestDecideInvalid(t *testing.T) {
	t.Parallel()
	cfg := Config{}.WithDefaults()
	for name, payload := range map[string][]byte{
		"bad JSON":           []byte(`{"specversion":`),
		"missing tenant":     sampleEvent(t, func(m map[string]any) { delete(m, "tenant") }),
		"missing recipients": sampleEvent(t, func(m map[string]any) { delete(m["data"].(map[string]any), "recipients") }),
		"missing revision":   sampleEvent(t, func(m map[string]any) { delete(order(m), "revision") }),
	} {
		d, err := cfg.decide(nil, payload, now)
		require.Error(t, err, name)
		require.Equal(t, Invalid, d.Outcome, name)
		require.Empty(t, d.Deliveries, name)
	}
}

// contacts lists n supplier contacts, each with an email address.
func contacts(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"name": fmt.Sprintf("Contact %d", i), "role": "supplier",
			"email": fmt.Sprintf("c%04d@zarya.example", i), "channels": []string{"email"}}
	}
	return out
}

func withContacts(n int) func(m map[string]any) {
	return func(m map[string]any) { m["data"].(map[string]any)["recipients"] = contacts(n) }
}

func TestDecideCapsRecipientsPerEvent(t *testing.T) {
	t.Parallel()
	stock, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	cfg := Config{Channels: []event.Channel{event.ChannelSMS}, MaxRecipients: 1}.WithDefaults()

	d, err := cfg.decide(nil, sampleEvent(t, nil), now)
	require.EqualError(t, err, "data.recipients: 2 recipients, more than router.max_recipients (1)")
	require.Equal(t, Invalid, d.Outcome)
	require.Empty(t, keys(d))

	d, err = cfg.decide(nil, stock, now)
	require.NoError(t, err, "a stock alert with one recipient is within the cap")
	require.Equal(t, Routed, d.Outcome)

	defaults := Config{}.WithDefaults()
	require.Equal(t, 500, defaults.MaxRecipients)
	_, err = defaults.decide(nil, sampleEvent(t, withContacts(500)), now)
	require.NoError(t, err)
	_, err = defaults.decide(nil, sampleEvent(t, withContacts(501)), now)
	require.EqualError(t, err, "data.recipients: 501 recipients, more than router.max_recipients (500)")
}

// An event with more deliveries than one message holds asks for its
// document in parts, each within the max payload, each with its own id.
func TestFitSplitsARenderRequestToFitTheMaxPayload(t *testing.T) {
	t.Parallel()
	cfg := Config{MaxRecipients: 1400}.WithDefaults()
	payload := sampleEvent(t, withContacts(1400))
	decide := func() Decision {
		d, err := cfg.decide(nil, payload, now)
		require.NoError(t, err)
		d.stamp(now)
		require.NoError(t, d.fit(maxPayload))
		return d
	}
	d := decide()
	require.Equal(t, Routed, d.Outcome)
	require.Greater(t, len(d.Renders), 1, "1,400 deliveries (~800 bytes each) do not fit one message")

	ids := map[string]bool{}
	var want []string
	for i := range 1400 {
		want = append(want, fmt.Sprintf("acme:PO-2026-0042:1:purchase_order:email:c%04d@zarya.example", i))
	}
	for _, r := range d.Renders {
		body, err := json.Marshal(r)
		require.NoError(t, err)
		require.LessOrEqual(t, len(body), maxPayload-documents.Headroom)
		require.Equal(t, "acme/PO-2026-0042/purchase_order-r1.pdf", r.Object, "every part is the same document")
		ids[documents.MsgID(r)] = true
	}
	require.Len(t, ids, len(d.Renders), "each part has its own message id")
	got := keys(d)
	slices.Sort(got)
	require.Equal(t, want, got, "every delivery in exactly one part")

	again := decide()
	for i, r := range again.Renders {
		require.Equal(t, documents.MsgID(d.Renders[i]), documents.MsgID(r), "the same event splits the same way")
	}
}

// What can never be published makes the event invalid at once, rather than
// failing every retry.
func TestFitRefusesMessagesThatCanNeverFit(t *testing.T) {
	t.Parallel()
	const small = documents.Headroom + 4<<10
	longLine := sampleEvent(t, func(m map[string]any) {
		order(m)["lines"].([]any)[0].(map[string]any)["description"] = strings.Repeat("Leche ", 1000)
	})
	d, err := Config{}.WithDefaults().decide(nil, longLine, now)
	require.NoError(t, err)
	err = d.fit(small)
	require.ErrorIs(t, err, documents.ErrTooLarge)
	require.ErrorContains(t, err, "render request acme/PO-2026-0042/purchase_order-r1.pdf with a single delivery is ")
	require.Equal(t, Invalid, d.Outcome)
	require.Empty(t, keys(d))

	stock, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	cfg := Config{Channels: []event.Channel{event.ChannelSMS}}.WithDefaults()
	d, err = cfg.decide(nil, stock, now)
	require.NoError(t, err)
	require.NoError(t, d.fit(small))
	err = d.fit(documents.Headroom + 100)
	require.ErrorIs(t, err, documents.ErrTooLarge)
	require.ErrorContains(t, err, "delivery "+notification.ID("acme:evt-2026-11-30-0100:0:low_stock:sms:+34600111222"))
	require.Equal(t, Invalid, d.Outcome)

	// Render requests split; the one record naming every notification
	// does not.
	crowd := sampleEvent(t, withContacts(100))
	d, err = Config{}.WithDefaults().decide(nil, crowd, now)
	require.NoError(t, err)
	err = d.fit(small)
	require.ErrorIs(t, err, documents.ErrTooLarge)
	require.ErrorContains(t, err, "the accepted record is ")
	require.Equal(t, Invalid, d.Outcome)
	d, err = Config{}.WithDefaults().decide(nil, crowd, now)
	require.NoError(t, err)
	require.NoError(t, d.fit(maxPayload))
}

func TestDecideStockAlert(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	cfg := Config{Channels: []event.Channel{event.ChannelSMS}}.WithDefaults()
	d, err := cfg.decide(nil, b, now)
	require.NoError(t, err)
	require.Equal(t, []string{"acme:evt-2026-11-30-0100:0:low_stock:sms:+34600111222"}, keys(d))
	require.Equal(t, 1, d.Skipped, "whatsapp is not deployed")
	require.Equal(t, notification.PriorityCritical, d.Deliveries[0].Priority)
	require.Nil(t, d.Deliveries[0].Document)
	require.Equal(t, "SEV-01", d.Deliveries[0].Stock.Warehouse)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cfg := Config{
		Channels:          []event.Channel{"pigeon"},
		MaxRecipients:     -1,
		RequireRegistered: true,
		Routes: []Route{
			{Event: "order.created", Document: "quote", Channels: []event.Channel{event.ChannelEmail}},
			{Event: "payment.captured", Template: "paid", Channels: []event.Channel{event.ChannelEmail}},
			{Event: "inventory.low_stock", Document: "invoice", Kind: event.KindSales, Channels: nil, Priority: "urgent"},
		},
	}.WithDefaults()
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`router.max_recipients: must be 1 or more (got -1)`,
		`router.routes[0].document: "quote" is not a document type`,
		`router.routes[1].event: event type "payment.captured": family "payment" has no stream`,
		`router.routes[2].document: inventory events carry no document`,
		`router.routes[2].kind: "sales" applies only to order events`,
		`router.routes[2].channels: at least one channel is required`,
		`router.routes[2].priority: "urgent" is not a priority`,
		`router.channels: "pigeon" is not a channel`,
		`tenants.require_registered: set, but the router was given no tenant registry`,
	} {
		require.ErrorContains(t, err, want)
	}
	require.NoError(t, Config{}.WithDefaults().Validate(), "the defaults are valid")
}

// A subject of three tokens is bound to the tenant it ends with; one of two
// tokens, a trusted publisher's, binds nothing.
func TestBoundTenant(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ subject, tenant, err string }{
		{"orders.created", "acme", ""},
		{"orders.created.acme", "acme", ""},
		{"inventory.low_stock.acme", "acme", ""},
		{"orders.created.globex", "acme", `tenant mismatch: event for tenant "acme" published on orders.created.globex, tenant "globex"'s subject`},
		{"inventory.low_stock.acme", "globex", `tenant mismatch: event for tenant "globex" published on inventory.low_stock.acme, tenant "acme"'s subject`},
		{"orders.created.Acme", "acme", `tenant mismatch: event for tenant "acme" published on orders.created.Acme, tenant "Acme"'s subject`},
	} {
		err := boundTenant(c.subject, c.tenant)
		if c.err == "" {
			require.NoError(t, err, c.subject)
			continue
		}
		require.EqualError(t, err, c.err)
	}
}

// BenchmarkRoute is the router's CPU per order as herald bench routes it
// (five email recipients, one template route, no document), short of the
// I/O: decide, stamp and fit (which encodes the deliveries publish sends),
// then encode the Accepted record.
func BenchmarkRoute(b *testing.B) {
	cfg := Config{Routes: []Route{{Event: "order.created", Template: "purchase_order", Channels: []event.Channel{event.ChannelEmail}}}}.WithDefaults()
	payload := sampleEvent(b, withContacts(5))
	b.ReportAllocs()
	for b.Loop() {
		d, err := cfg.decide(nil, payload, now)
		if err != nil || len(d.Deliveries) != 5 {
			b.Fatalf("%d deliveries, %v", len(d.Deliveries), err)
		}
		d.stamp(now)
		if err := d.fit(maxPayload); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(notification.AcceptedOf(d.Event.ID, d.all(), now)); err != nil {
			b.Fatal(err)
		}
	}
}

// An event in binary content mode is routed as the same event in
// structured mode is, and one missing an attribute is invalid with the
// header named.
func TestDecideBinaryMode(t *testing.T) {
	t.Parallel()
	cfg := Config{}.WithDefaults()
	payload := sampleEvent(t, nil)
	want, err := cfg.decide(nats.Header{"Nats-Msg-Id": {"evt-2026-11-30-0001"}}, payload, now)
	require.NoError(t, err)

	header, body, err := event.Binary(payload)
	require.NoError(t, err)
	got, err := cfg.decide(nats.Header(header), body, now)
	require.NoError(t, err)
	require.Equal(t, want, got)

	delete(header, "ce-tenant")
	got, err = cfg.decide(nats.Header(header), body, now)
	require.EqualError(t, err, "invalid event: ce-tenant: is required")
	require.Equal(t, Invalid, got.Outcome)
}

func TestTheDefaultRoutesCategoriesDocumentsRequired(t *testing.T) {
	t.Parallel()
	require.Equal(t, []recipient.Category{{Name: "alerts"}, {Name: "documents", Required: true}}, Categories(DefaultRoutes()))
}
