package event_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
)

func sample(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func encode(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

func TestDecodeSample(t *testing.T) {
	t.Parallel()
	ev, err := event.Decode(encode(t, sample(t)))
	require.NoError(t, err)
	require.Equal(t, "evt-2026-11-30-0001", ev.ID)
	require.Equal(t, "acme", ev.Tenant)

	data, err := ev.OrderData()
	require.NoError(t, err)
	require.Equal(t, "PO-2026-0042", data.Order.ID)
	require.Equal(t, event.KindPurchase, data.Order.Kind)
	require.Equal(t, event.Decimal("183.48"), data.Order.Totals.Gross)
	require.Equal(t, "Кефир 0,5 л", data.Order.Lines[1].Description)
	require.Len(t, data.Recipients, 2)
	require.Equal(t, "olga@zarya.example", data.Recipients[0].Address(event.ChannelEmail))
	require.Equal(t, "+79990001122", data.Recipients[0].Address(event.ChannelWhatsApp))
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(m map[string]any)
		raw    string
		reason string // a fragment the error must contain
	}{
		{name: "not JSON", raw: `{"id": "x",`, reason: "malformed event"},
		{name: "empty payload", raw: ``, reason: "empty payload"},
		{name: "a JSON array", raw: `[1,2]`, reason: "malformed event"},
		{name: "missing tenant", edit: func(m map[string]any) { delete(m, "tenant") }, reason: "tenant: is required"},
		{name: "tenant with a dot", edit: func(m map[string]any) { m["tenant"] = "acme.eu" }, reason: "tenant: \"acme.eu\" must be"},
		{name: "missing id", edit: func(m map[string]any) { m["id"] = " " }, reason: "id: is required"},
		{name: "missing source", edit: func(m map[string]any) { delete(m, "source") }, reason: "source: is required"},
		{name: "missing type", edit: func(m map[string]any) { delete(m, "type") }, reason: "type: is required"},
		{name: "wrong specversion", edit: func(m map[string]any) { m["specversion"] = "0.3" }, reason: "specversion: \"0.3\" is not supported"},
		{name: "XML data", edit: func(m map[string]any) { m["datacontenttype"] = "application/xml" }, reason: "datacontenttype"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			payload := []byte(tt.raw)
			if tt.edit != nil {
				m := sample(t)
				tt.edit(m)
				payload = encode(t, m)
			}
			_, err := event.Decode(payload)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.reason)
		})
	}
}

func TestOrderDataRejects(t *testing.T) {
	t.Parallel()
	order := func(m map[string]any) map[string]any { return m["data"].(map[string]any)["order"].(map[string]any) }
	recipient := func(m map[string]any, i int) map[string]any {
		return m["data"].(map[string]any)["recipients"].([]any)[i].(map[string]any)
	}
	tests := []struct {
		name   string
		edit   func(m map[string]any)
		reason string
	}{
		{"no data", func(m map[string]any) { delete(m, "data") }, "data: is required"},
		{"missing order id", func(m map[string]any) { delete(order(m), "id") }, "data.order.id: is required"},
		{"order id with a colon", func(m map[string]any) { order(m)["id"] = "PO:1" }, `data.order.id: "PO:1" may contain only letters, digits`},
		{"missing revision", func(m map[string]any) { delete(order(m), "revision") }, "data.order.revision: is required"},
		{"unknown kind", func(m map[string]any) { order(m)["kind"] = "barter" }, "data.order.kind"},
		{"money as a number", func(m map[string]any) { order(m)["totals"].(map[string]any)["gross"] = 183.48 }, "must be a JSON string"},
		{"money with a comma", func(m map[string]any) { order(m)["totals"].(map[string]any)["gross"] = "183,48" }, "data.order.totals.gross"},
		{"missing recipients", func(m map[string]any) { delete(m["data"].(map[string]any), "recipients") }, "data.recipients: at least one recipient is required"},
		{"recipient without channels", func(m map[string]any) { delete(recipient(m, 1), "channels") }, "data.recipients[1].channels: at least one channel"},
		{"unknown channel", func(m map[string]any) { recipient(m, 1)["channels"] = []any{"fax"} }, "\"fax\" is not a channel"},
		{"inbox for an inline contact", func(m map[string]any) { recipient(m, 1)["channels"] = []any{"inbox"} }, "channel inbox reaches the tenant's subscribers only"},
		{"push for an inline contact", func(m map[string]any) { recipient(m, 1)["channels"] = []any{"push"} }, "channel push reaches the tenant's subscribers only"},
		{"email channel without address", func(m map[string]any) { delete(recipient(m, 1), "email") }, "data.recipients[1].email"},
		{"bad email", func(m map[string]any) { recipient(m, 1)["email"] = "compras at frutas" }, "is not an email address"},
		{"whatsapp without E.164 phone", func(m map[string]any) { recipient(m, 0)["phone"] = "8 999 000" }, "E.164"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := sample(t)
			tt.edit(m)
			ev, err := event.Decode(encode(t, m))
			require.NoError(t, err, "the envelope is fine; the data is not")
			_, err = ev.OrderData()
			var verr *event.ValidationError
			require.True(t, errors.As(err, &verr), "want a ValidationError, got %v", err)
			require.Contains(t, err.Error(), tt.reason)
		})
	}
}

func TestValidationErrorListsEveryProblem(t *testing.T) {
	t.Parallel()
	m := sample(t)
	delete(m, "tenant")
	delete(m, "source")
	_, err := event.Decode(encode(t, m))
	require.Error(t, err)
	require.Equal(t, 2, strings.Count(err.Error(), "is required"), err.Error())
}

func TestStockData(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	ev, err := event.Decode(b)
	require.NoError(t, err)
	data, err := ev.StockData()
	require.NoError(t, err)
	require.Equal(t, "MILK-1L", data.Stock.SKU)
	require.Equal(t, "+34600111222", data.Recipients[0].Address(event.ChannelSMS))

	ev.Data = []byte(`{"stock":{"sku":"MILK-1L"},"recipients":[]}`)
	_, err = ev.StockData()
	require.ErrorContains(t, err, "data.stock.warehouse: is required")
	require.ErrorContains(t, err, "data.recipients: at least one recipient is required")
}

func TestSubject(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]string{
		"order.created":       "orders.created",
		"order.invoiced":      "orders.invoiced",
		"inventory.low_stock": "inventory.low_stock",
	} {
		got, err := event.Subject(typ)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	for _, bad := range []string{"order", "order.", "payment.captured", "order.a.b", "order.*"} {
		_, err := event.Subject(bad)
		require.Error(t, err, bad)
	}
}
