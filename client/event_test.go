package client_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// sample decodes one of the repository's sample events, as the router does.
func sample(t *testing.T, name string) event.Event {
	t.Helper()
	b, err := os.ReadFile("../examples/events/" + name)
	require.NoError(t, err)
	ev, err := event.Decode(b)
	require.NoError(t, err)
	return ev
}

func sampleOrder(t *testing.T) event.OrderData {
	t.Helper()
	d, err := sample(t, "order.created.json").OrderData()
	require.NoError(t, err)
	return d
}

func sampleStock(t *testing.T) event.StockData {
	t.Helper()
	d, err := sample(t, "inventory.low_stock.json").StockData()
	require.NoError(t, err)
	return d
}

// acme is an envelope for the sample tenant, with a fresh id each event.
var acme = client.Envelope{Tenant: "acme", Source: "/erp/purchasing"}

// decoded is what the router reads from the bytes an event would send.
func decoded(t *testing.T, ev *client.Event) event.Event {
	t.Helper()
	b, err := ev.Build()
	require.NoError(t, err)
	got, err := event.Decode(b)
	require.NoError(t, err)
	return got
}

// The builders make the repository's sample events: the router reads from
// the client's bytes the same envelope and data as from the samples.
func TestBuildersMakeTheSampleEvents(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file  string
		build func(client.Envelope, event.Event) *client.Event
	}{
		{"order.created.json", func(env client.Envelope, ev event.Event) *client.Event {
			d, err := ev.OrderData()
			require.NoError(t, err)
			return client.OrderCreated(env, d.Order, d.Recipients...)
		}},
		{"order.updated.json", func(env client.Envelope, ev event.Event) *client.Event {
			d, err := ev.OrderData()
			require.NoError(t, err)
			return client.OrderUpdated(env, d.Order, d.Recipients...)
		}},
		{"order.confirmed.json", func(env client.Envelope, ev event.Event) *client.Event {
			d, err := ev.OrderData()
			require.NoError(t, err)
			return client.OrderConfirmed(env, d.Order)
		}},
		{"order.cancelled.json", func(env client.Envelope, ev event.Event) *client.Event {
			d, err := ev.OrderData()
			require.NoError(t, err)
			return client.OrderCancelled(env, d.Order)
		}},
		{"inventory.low_stock.json", func(env client.Envelope, ev event.Event) *client.Event {
			d, err := ev.StockData()
			require.NoError(t, err)
			return client.LowStock(env, d.Stock, d.Recipients...)
		}},
	} {
		want := sample(t, c.file)
		env := client.Envelope{Tenant: want.Tenant, Source: want.Source, ID: want.ID, Time: want.Time}
		got := decoded(t, c.build(env, want))

		require.JSONEq(t, string(want.Data), string(got.Data), c.file)
		want.Data, got.Data = nil, nil
		require.Equal(t, want, got, c.file)
	}
}

// Every type Herald's default routes read has its builder, published on the
// subject of its stream; a tenant-bound publisher's subject ends with the
// tenant.
func TestEveryTypeIsBuiltForItsSubject(t *testing.T) {
	t.Parallel()
	order, stock := sampleOrder(t), sampleStock(t)
	orderOf := func(f func(client.Envelope, event.Order, ...event.Recipient) *client.Event) func(client.Envelope) *client.Event {
		return func(env client.Envelope) *client.Event { return f(env, order.Order, order.Recipients...) }
	}
	for _, c := range []struct {
		typ, subject string
		build        func(client.Envelope) *client.Event
	}{
		{"order.created", "orders.created", orderOf(client.OrderCreated)},
		{"order.updated", "orders.updated", orderOf(client.OrderUpdated)},
		{"order.shipped", "orders.shipped", orderOf(client.OrderShipped)},
		{"order.received", "orders.received", orderOf(client.OrderReceived)},
		{"order.invoiced", "orders.invoiced", orderOf(client.OrderInvoiced)},
		{"order.confirmed", "orders.confirmed", func(env client.Envelope) *client.Event {
			return client.OrderConfirmed(env, order.Order)
		}},
		{"order.cancelled", "orders.cancelled", func(env client.Envelope) *client.Event {
			return client.OrderCancelled(env, order.Order)
		}},
		{"inventory.low_stock", "inventory.low_stock", func(env client.Envelope) *client.Event {
			return client.LowStock(env, stock.Stock, stock.Recipients...)
		}},
	} {
		ev := c.build(acme)
		got := decoded(t, ev)
		require.Equal(t, c.typ, got.Type)
		require.Equal(t, c.subject, ev.Subject(), c.typ)
		subject, err := event.Subject(c.typ)
		require.NoError(t, err)
		require.Equal(t, subject, ev.Subject(), "%s: the subject event.Subject names", c.typ)

		bound := acme
		bound.TenantSubject = true
		require.Equal(t, c.subject+".acme", c.build(bound).Subject(), c.typ)
	}
}

// What a builder fills in: the CloudEvents envelope, a fresh id valid as a
// dedupe key, the time it was made — fixed, so publishing again sends the
// same bytes.
func TestTheEnvelopeIsFilledIn(t *testing.T) {
	t.Parallel()
	d := sampleOrder(t)
	before := time.Now()
	ev := client.OrderCreated(acme, d.Order, d.Recipients...)
	got := decoded(t, ev)

	require.Equal(t, "1.0", got.SpecVersion)
	require.Equal(t, "application/json", got.DataContentType)
	require.Equal(t, "acme", got.Tenant)
	require.Equal(t, "/erp/purchasing", got.Source)
	require.Equal(t, ev.ID(), got.ID)
	require.True(t, strings.HasPrefix(got.ID, "evt-"), got.ID)
	require.True(t, event.ValidID(got.ID, 256), got.ID)
	require.WithinRange(t, got.Time, before.Add(-time.Millisecond), time.Now())

	first, err := ev.Build()
	require.NoError(t, err)
	again, err := ev.Build()
	require.NoError(t, err)
	require.Equal(t, first, again, "an event is the same bytes every time")

	other := client.OrderCreated(acme, d.Order, d.Recipients...)
	require.NotEqual(t, ev.ID(), other.ID(), "each event made gets its own id")
}

// An invalid event fails when it is built, with the router's own words: a
// *event.ValidationError listing every problem.
func TestBadFieldsFailWithTheRoutersWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		edit  func(*client.Envelope, *event.OrderData)
		wants []string
	}{
		{"no tenant", func(e *client.Envelope, _ *event.OrderData) { e.Tenant = "" },
			[]string{"tenant: is required"}},
		{"a tenant that is no subject token", func(e *client.Envelope, _ *event.OrderData) { e.Tenant = "ac.me" },
			[]string{`tenant: "ac.me" must be 1-64 letters, digits, '-' or '_'`}},
		{"no source", func(e *client.Envelope, _ *event.OrderData) { e.Source = " " },
			[]string{"source: is required"}},
		{"an event id with a separator", func(e *client.Envelope, _ *event.OrderData) { e.ID = "PO:1" },
			[]string{`id: "PO:1" may contain only letters, digits, '-', '_' and '.', and must not start with '.'`}},
		{"an order id that would split an object name", func(_ *client.Envelope, d *event.OrderData) { d.Order.ID = "a/b" },
			[]string{`data.order.id: "a/b" may contain only letters, digits, '-', '_' and '.', and must not start with '.'`}},
		{"every problem at once", func(_ *client.Envelope, d *event.OrderData) {
			d.Order.Kind, d.Order.Currency, d.Order.Revision = "barter", "eur", 0
		}, []string{
			`data.order.kind: "barter" must be "purchase" or "sales"`,
			"data.order.revision: is required and must be 1 or more (got 0)",
			`data.order.currency: "eur" must be an ISO 4217 code such as EUR`,
		}},
		{"an amount that is no decimal", func(_ *client.Envelope, d *event.OrderData) { d.Order.Lines[0].UnitPrice = "0,89" },
			[]string{`data.order.lines[0].unit_price: "0,89" is not a decimal such as "183.48"`}},
		{"a name that would forge a header line", func(_ *client.Envelope, d *event.OrderData) {
			d.Recipients[0].Name = "Olga\r\nBcc: all@example.com"
		}, []string{"data.recipients[0].name: contains control characters"}},
		{"an email channel without an address", func(_ *client.Envelope, d *event.OrderData) { d.Recipients[1].Email = "compras" },
			[]string{`data.recipients[1].email: "compras" is not an email address (needed for channel email)`}},
		{"no recipients", func(_ *client.Envelope, d *event.OrderData) { d.Recipients = nil },
			[]string{"data.recipients: at least one recipient is required"}},
	} {
		env, d := acme, sampleOrder(t)
		c.edit(&env, &d)
		ev := client.OrderCreated(env, d.Order, d.Recipients...)

		_, err := ev.Build()
		var invalid *event.ValidationError
		require.ErrorAs(t, err, &invalid, c.name)
		require.Equal(t, c.wants, invalid.Problems, c.name)
		_, err = ev.Msg(t.Context())
		var fromMsg *event.ValidationError
		require.ErrorAs(t, err, &fromMsg, c.name)
		require.Same(t, invalid, fromMsg, "%s: Msg returns the same error", c.name)
	}
}

// A stock alert is checked as the router checks inventory events: a phone
// in E.164 for the SMS channel, a warehouse.
func TestBadStockFailsWithTheRoutersWords(t *testing.T) {
	t.Parallel()
	d := sampleStock(t)
	d.Stock.Warehouse = ""
	d.Recipients[0].Phone = "600 111 222"
	_, err := client.LowStock(acme, d.Stock, d.Recipients...).Build()
	var invalid *event.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, []string{
		"data.stock.warehouse: is required",
		`data.recipients[0].phone: "600 111 222" is not an E.164 phone number such as +34600111222 (needed for channel sms)`,
		`data.recipients[0].phone: "600 111 222" is not an E.164 phone number such as +34600111222 (needed for channel whatsapp)`,
	}, invalid.Problems)
}

// Bytes that are not UTF-8 would reach Herald as U+FFFD — two names would
// become one — so the router refuses them, and so does the client.
func TestTextThatIsNotUTF8IsRefused(t *testing.T) {
	t.Parallel()
	d := sampleOrder(t)
	d.Order.Buyer.Name = "Frutas \xff"
	_, err := client.OrderCreated(acme, d.Order, d.Recipients...).Build()
	var invalid *event.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, []string{
		`data.order.buyer.name: contains U+FFFD or an unpaired \u surrogate escape: text must be valid Unicode`,
	}, invalid.Problems)
}

// A generic builder takes only its own family's types: an order type has
// no stock data, and a type needs a stream.
func TestTypesOutsideTheirFamilyAreRefused(t *testing.T) {
	t.Parallel()
	order, stock := sampleOrder(t), sampleStock(t)
	for _, c := range []struct {
		ev   *client.Event
		want string
	}{
		{client.NewOrderEvent("inventory.low_stock", acme, order.Order, order.Recipients...), `type: "inventory.low_stock" is not an order event (want order.<name>)`},
		{client.NewStockEvent("order.created", acme, stock.Stock, stock.Recipients...), `type: "order.created" is not an inventory event (want inventory.<name>)`},
		{client.NewOrderEvent("order", acme, order.Order, order.Recipients...), `type: "order": want <family>.<name>, such as order.created`},
		{client.NewOrderEvent("order.*", acme, order.Order, order.Recipients...), `type: "order.*": want <family>.<name>, such as order.created`},
	} {
		_, err := c.ev.Build()
		var invalid *event.ValidationError
		require.ErrorAs(t, err, &invalid)
		require.Equal(t, []string{c.want}, invalid.Problems)
	}
}

// An Event no constructor made says so rather than publish nothing.
func TestAnEventMustBeMade(t *testing.T) {
	t.Parallel()
	for _, ev := range []*client.Event{nil, {}} {
		_, err := ev.Build()
		require.ErrorContains(t, err, "must be made by a constructor")
		_, err = ev.Msg(t.Context())
		require.ErrorContains(t, err, "must be made by a constructor")
	}
}
