package event_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
)

// sampleText is the sample order as the publisher wrote it, for edits that
// a map cannot express (repeated keys, raw bytes).
func sampleText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	return string(b)
}

// edit replaces exactly one occurrence of old in the sample.
func edit(t *testing.T, old, replacement string) []byte {
	t.Helper()
	s := sampleText(t)
	require.Equal(t, 1, strings.Count(s, old), "the sample must contain %q once", old)
	return []byte(strings.Replace(s, old, replacement, 1))
}

// decodeOrder decodes an event and its order data, returning the first
// error met.
func decodeOrder(payload []byte) error {
	ev, err := event.Decode(payload)
	if err != nil {
		return err
	}
	_, err = ev.OrderData()
	return err
}

func TestDecodeRefusesWhatTwoParsersCouldReadDifferently(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new string
		reason         string
	}{
		{"the same envelope key twice", `"tenant": "acme"`, `"tenant": "acme", "tenant": "victim"`,
			"tenant: appears twice in one object"},
		{"envelope keys differing only in case", `"tenant": "acme"`, `"tenant": "acme", "TENANT": "victim"`,
			`TENANT: differs only in case from "tenant"`},
		{"a lone upper-case attribute", `"tenant": "acme"`, `"TENANT": "acme"`,
			`TENANT: attribute names are lowercase letters and digits (CloudEvents 1.0): did you mean "tenant"?`},
		{"a long s that encoding/json folds to s", `"source": "/erp/purchasing"`, `"ſource": "/erp/purchasing"`,
			`"ſource": attribute names are lowercase letters and digits (CloudEvents 1.0): did you mean "source"?`},
		{"an attribute name with an underscore", `"tenant": "acme"`, `"tenant": "acme", "my_ext": "x"`,
			"my_ext: attribute names are lowercase letters and digits"},
		{"a data key twice", `"id": "PO-2026-0042"`, `"id": "PO-2026-0042", "id": "PO-OTHER"`,
			"data.order.id: appears twice in one object"},
		{"data keys differing only in case, deep down", `"sku": "MILK-1L",`, `"sku": "MILK-1L", "SKU": "OTHER",`,
			`data.order.lines[0].SKU: differs only in case from "sku"`},
		{"a data key in two cases", `"kind": "purchase"`, `"Kind": "sales", "kind": "purchase"`,
			`data.order.kind: differs only in case from "Kind"`},
		{"a data key that matches a field only ignoring case", `"email": "compras@`, `"Email": "compras@`,
			`data.recipients[1].Email: is not a field: did you mean "email"? (field names are case-sensitive)`},
		{"a lone surrogate escape", `"id": "PO-2026-0042"`, `"id": "PO-\ud800"`,
			"data.order.id: contains U+FFFD or an unpaired \\u surrogate escape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := decodeOrder(edit(t, tt.old, tt.new))
			var verr *event.ValidationError
			require.True(t, errors.As(err, &verr), "want a ValidationError, got %v", err)
			require.Contains(t, err.Error(), tt.reason)
		})
	}
}

func TestDecodeKeepsWhatIsUnambiguous(t *testing.T) {
	t.Parallel()
	// An extension attribute, an unknown data field, the same key in two
	// different objects, a key escaped as \u0069d: all read one way only.
	payload := edit(t, `"tenant": "acme"`, `"tenant": "acme", "traceparent2": "x"`)
	payload = []byte(strings.Replace(string(payload), `"id": "PO-2026-0042"`, `"\u0069d": "PO-2026-0042", "notes": "urgent"`, 1))
	ev, err := event.Decode(payload)
	require.NoError(t, err)
	data, err := ev.OrderData()
	require.NoError(t, err)
	require.Equal(t, "PO-2026-0042", data.Order.ID)
	require.Equal(t, "acme", ev.Tenant)
}

func TestDecodeRefusesBytesThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	for name, payload := range map[string][]byte{
		"in a value": edit(t, `"PO-2026-0042"`, "\"PO-2026-\xff0042\""),
		"in a key":   edit(t, `"currency"`, "\"curr\xc3ency\""),
	} {
		_, err := event.Decode(payload)
		require.ErrorIs(t, err, event.ErrMalformed, name)
		require.ErrorContains(t, err, "not valid UTF-8 at byte", name)
	}
}

func TestDecodeBoundsNesting(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
	_, err := event.Decode(edit(t, `"tenant": "acme"`, `"tenant": "acme", "ext": `+deep))
	require.ErrorIs(t, err, event.ErrMalformed)
	require.ErrorContains(t, err, "ext[0][0]")
	require.ErrorContains(t, err, "nested deeper than 32 levels")
}

func TestTextWithControlCharactersIsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct{ old, new, field string }{
		{`"name": "Compras"`, `"name": "Compras\r\nBcc: spy@evil.example"`, "data.recipients[1].name"},
		{`"name": "Compras"`, `"name": "Compras\u2028Bcc: spy@evil.example"`, "data.recipients[1].name"},
		{`"role": "buyer"`, `"role": "buyer\n"`, "data.recipients[1].role"},
		{`"email": "compras@frutasdelsur.example"`, `"email": "compras@frutasdelsur.example\n"`, "data.recipients[1].email"},
		{`"locale": "ru"`, `"locale": "ru\u0000"`, "data.recipients[0].locale"},
		{`"name": "Frutas del Sur S.L."`, `"name": "Frutas del Sur S.L.\nBcc: spy@evil.example"`, "data.order.buyer.name"},
		{`"tax_id": "7701234567"`, `"tax_id": "7701234567\u0085"`, "data.order.supplier.tax_id"},
		{`"address": "Calle Mayor 1, 41001 Sevilla"`, `"address": "Calle Mayor 1\r\n41001 Sevilla"`, "data.order.buyer.address"},
		{`"address": "Calle Mayor 1, 41001 Sevilla"`, `"address": "Calle Mayor 1\u202941001 Sevilla"`, "data.order.buyer.address"},
		{`"description": "Leche entera 1 L"`, `"description": "Leche\tentera"`, "data.order.lines[0].description"},
		{`"sku": "MILK-1L"`, `"sku": "MILK\u007f"`, "data.order.lines[0].sku"},
		{`"unit": "ud", "unit_price": "1.25"`, `"unit": "ud\u009b", "unit_price": "1.25"`, "data.order.lines[1].unit"},
		{`"locale": "es"`, `"locale": "es\n"`, "data.order.locale"},
		{`"source": "/erp/purchasing"`, `"source": "/erp/purchasing\r\n"`, "source"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			err := decodeOrder(edit(t, tt.old, tt.new))
			require.ErrorContains(t, err, tt.field+": contains control characters")
		})
	}
}

func TestAPostalAddressMaySpanLines(t *testing.T) {
	t.Parallel()
	err := decodeOrder(edit(t, `"address": "Calle Mayor 1, 41001 Sevilla"`, `"address": "Calle Mayor 1\n41001 Sevilla"`))
	require.NoError(t, err)
}

func TestStockTextWithControlCharactersIsRefused(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	payload := strings.Replace(string(b), `"warehouse": "SEV-01"`, `"warehouse": "SEV-01\r\nBcc: x"`, 1)
	ev, err := event.Decode([]byte(payload))
	require.NoError(t, err)
	_, err = ev.StockData()
	require.ErrorContains(t, err, "data.stock.warehouse: contains control characters")
}

func TestIDsAreAllowListed(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"PO-2026-0042", "a", "A_b.c-9", "po.2026..1", strings.Repeat("x", 128)} {
		require.True(t, event.ValidID(id, 128), id)
		require.NoError(t, decodeOrder(edit(t, `"id": "PO-2026-0042"`, `"id": "`+id+`"`)), id)
	}
	for _, id := range []string{"..", ".", ".hidden", "a//b", "../../etc/passwd", "a/b", "PO:1", "PO 1", "Заказ-1",
		"PO-\u00e9", strings.Repeat("x", 129)} {
		require.False(t, event.ValidID(id, 128), id)
		err := decodeOrder(edit(t, `"id": "PO-2026-0042"`, `"id": "`+id+`"`))
		require.ErrorContains(t, err, "data.order.id: ", id)
	}
	// The event id becomes the dedupe key of a stock alert: the same rule.
	_, err := event.Decode(edit(t, `"id": "evt-2026-11-30-0001"`, `"id": "../evt"`))
	require.ErrorContains(t, err, `id: "../evt" may contain only letters, digits, '-', '_' and '.'`)
}

func TestErrorsNeverRepeatAPublishersBytesAtLength(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("9", 5000)
	tests := []struct{ old, new, reason string }{
		{`"gross": "183.48"`, `"gross": 1` + long, `data.order.totals.gross: must be a JSON string such as "183.48", not a number`},
		{`"gross": "183.48"`, `"gross": {"` + long + `": 1}`, `data.order.totals.gross: must be a JSON string such as "183.48", not a object`},
		{`"gross": "183.48"`, `"gross": "` + long + `x"`, `data.order.totals.gross: "9999`},
		{`"revision": 1`, `"revision": 1` + long, `data.order.revision: JSON number where int was expected`},
		{`"issued_at": "2026-11-30T09:00:00Z"`, `"issued_at": "` + long + `"`, `is not an RFC 3339 time`},
		{`"tenant": "acme"`, `"tenant": "` + long + `"`, `tenant: "9999`},
		{`"currency": "EUR"`, `"currency": "` + long + `"`, `data.order.currency: "9999`},
	}
	for _, tt := range tests {
		err := decodeOrder(edit(t, tt.old, tt.new))
		require.ErrorContains(t, err, tt.reason)
		require.NotContains(t, err.Error(), strings.Repeat("9", 100), "the value is cut")
		require.Less(t, len(err.Error()), 300, err.Error())
	}
}

func TestValidationErrorIsBounded(t *testing.T) {
	t.Parallel()
	bad := `{ "email": "nobody", "channels": ["email"] }`
	recipients := strings.TrimSuffix(strings.Repeat(bad+",", 50), ",")
	s := sampleText(t)
	start := strings.Index(s, `"recipients": [`)
	end := strings.LastIndex(s, "]")
	payload := s[:start] + `"recipients": [` + recipients + s[end:]
	err := decodeOrder([]byte(payload))
	var verr *event.ValidationError
	require.True(t, errors.As(err, &verr), "want a ValidationError, got %v", err)
	require.Len(t, verr.Problems, 21)
	require.Equal(t, "and 30 more problems", verr.Problems[20])
}

// BenchmarkDecodeOrder is the router's cost per event: the strict walk, the
// envelope and the order's data.
func BenchmarkDecodeOrder(b *testing.B) {
	payload, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		ev, err := event.Decode(payload)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ev.OrderData(); err != nil {
			b.Fatal(err)
		}
	}
}
