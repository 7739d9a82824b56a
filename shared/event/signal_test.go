package event_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
)

// signal is an event of type typ with data as its data.
func signal(typ, data string) []byte {
	return fmt.Appendf(nil, `{"specversion":"1.0","id":"evt-1","source":"/erp","type":%q,"tenant":"acme","data":%s}`, typ, data)
}

// The samples of order.confirmed and order.cancelled name the sample
// purchase order and nothing else, and are read as the router reads them.
func TestTheSignalSamplesNameTheSampleOrder(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"order.confirmed.json", "order.cancelled.json"} {
		b, err := os.ReadFile("../../examples/events/" + file)
		require.NoError(t, err)
		ev, data, err := event.Read(b)
		require.NoError(t, err, file)
		require.True(t, event.IsOrderSignal(ev.Type), file)
		require.NotNil(t, data.Order, file)
		require.Equal(t, "PO-2026-0042", data.Order.Order.ID, file)
		require.Equal(t, event.KindPurchase, data.Order.Order.Kind, file)
		require.Empty(t, data.Order.Recipients, file)
	}
}

// A confirmation or a cancellation needs the order's id and kind, what an
// ERP knows of every order; whatever else it carries is checked as in any
// order event.
func TestAnOrderSignalNeedsItsOrdersIDAndKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		data     string
		problems []string // none: accepted
	}{
		{name: "id and kind", data: `{"order":{"id":"PO-1","kind":"sales"}}`},
		{name: "with its revision, parties and currency", data: `{"order":{"id":"PO-1","kind":"purchase","revision":3,"currency":"EUR",` +
			`"supplier":{"name":"Zarya","account":"zarya"}}}`},
		{name: "with a recipient", data: `{"order":{"id":"PO-1","kind":"purchase"},"recipients":[{"role":"buyer","email":"a@b.example","channels":["email"]}]}`},
		{name: "no data", data: `null`, problems: []string{"data: is required"}},
		{name: "no order", data: `{}`, problems: []string{
			"data.order.id: is required", `data.order.kind: "" must be "purchase" or "sales"`}},
		{name: "no id", data: `{"order":{"kind":"purchase"}}`, problems: []string{"data.order.id: is required"}},
		{name: "no kind", data: `{"order":{"id":"PO-1"}}`, problems: []string{`data.order.kind: "" must be "purchase" or "sales"`}},
		{name: "an id that is no id", data: `{"order":{"id":"PO:1","kind":"purchase"}}`, problems: []string{
			`data.order.id: "PO:1" may contain only letters, digits, '-', '_' and '.', and must not start with '.'`}},
		{name: "a revision below 1", data: `{"order":{"id":"PO-1","kind":"purchase","revision":-1}}`, problems: []string{
			"data.order.revision: must be 1 or more when given (got -1)"}},
		{name: "a currency that is no code", data: `{"order":{"id":"PO-1","kind":"purchase","currency":"eur"}}`, problems: []string{
			`data.order.currency: "eur" must be an ISO 4217 code such as EUR`}},
		{name: "a party's name across lines", data: `{"order":{"id":"PO-1","kind":"purchase","supplier":{"name":"Zarya\nBcc: x"}}}`, problems: []string{
			"data.order.supplier.name: contains control characters"}},
		{name: "a total that is no decimal", data: `{"order":{"id":"PO-1","kind":"purchase","totals":{"gross":"1,50"}}}`, problems: []string{
			`data.order.totals.gross: "1,50" is not a decimal such as "183.48"`}},
		{name: "a recipient with no address", data: `{"order":{"id":"PO-1","kind":"purchase"},"recipients":[{"role":"buyer","channels":["email"]}]}`, problems: []string{
			`data.recipients[0].email: "" is not an email address (needed for channel email)`}},
	}
	for _, typ := range []string{event.TypeOrderConfirmed, event.TypeOrderCancelled} {
		for _, tt := range tests {
			t.Run(typ+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				_, data, err := event.Read(signal(typ, tt.data))
				if tt.problems == nil {
					require.NoError(t, err)
					require.NotNil(t, data.Order)
					return
				}
				require.Equal(t, tt.problems, problemsOf(t, err))
			})
		}
	}
}

// The other order types keep their rules: an order event that is not a
// signal needs the whole order and someone to hear of it.
func TestOtherOrderTypesNeedTheWholeOrder(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"order.created", "order.updated", "order.shipped", "order.received", "order.invoiced", "order.confirmed_by_fax"} {
		require.False(t, event.IsOrderSignal(typ), typ)
		_, _, err := event.Read(signal(typ, `{"order":{"id":"PO-1","kind":"purchase"}}`))
		require.Equal(t, []string{
			"data.order.revision: is required and must be 1 or more (got 0)",
			`data.order.currency: "" must be an ISO 4217 code such as EUR`,
			"data.order.totals.net: is required",
			"data.order.totals.tax: is required",
			"data.order.totals.gross: is required",
			"data.recipients: at least one recipient is required",
		}, problemsOf(t, err), typ)
	}
}
