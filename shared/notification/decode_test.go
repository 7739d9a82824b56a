package notification_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
)

// A delivery without a field a worker needs is refused naming every one
// it lacks, in order of name; a job's message stands in for a template.
func TestDecodeNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, payload, want string
	}{
		{"nothing", `{}`, "malformed delivery: missing channel, dedupe_key, id, recipient.address, template, tenant"},
		{"no template", `{"id":"ntf_1","dedupe_key":"k","tenant":"acme","channel":"email","recipient":{"address":"a@b.example"}}`,
			"malformed delivery: missing template"},
		{"an empty message", `{"id":"ntf_1","tenant":"acme","channel":"email","message":{}}`,
			"malformed delivery: missing dedupe_key, message.subject, message.text, recipient.address"},
		{"a message without text", `{"id":"ntf_1","dedupe_key":"k","tenant":"acme","channel":"email","recipient":{"address":"a@b.example"},"message":{"subject":"Hi"}}`,
			"malformed delivery: missing message.text"},
		{"a message without a subject, and no tenant", `{"id":"ntf_1","dedupe_key":"k","channel":"email","recipient":{"address":"a@b.example"},"message":{"text":"Hello"}}`,
			"malformed delivery: missing message.subject, tenant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := notification.Decode([]byte(tt.payload))
			require.EqualError(t, err, tt.want)
			require.Zero(t, d)
		})
	}
	d, err := notification.Decode([]byte(`{"id":"ntf_1","dedupe_key":"k","tenant":"acme","channel":"email","recipient":{"address":"a@b.example"},"message":{"subject":"Hi","text":"Hello"}}`))
	require.NoError(t, err, "a job needs no template")
	require.Equal(t, "Hello", d.Message.Text)
}

// BenchmarkDecode is what reading one routed email delivery costs a
// delivery worker.
func BenchmarkDecode(b *testing.B) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	payload, err := json.Marshal(notification.Delivery{
		ID: "ntf_8c1d5e0b6f0d4a0f9e3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c", Tenant: "acme",
		DedupeKey: "acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example",
		Channel:   event.ChannelEmail, Priority: notification.PriorityNormal, Category: "documents", Required: true,
		Recipient: notification.Recipient{Name: "Olga Petrova", Role: "supplier", Address: "olga@zarya.example"},
		Template:  "purchase_order", Locale: "es",
		Document: &notification.Document{Type: "purchase_order", Object: "acme/PO-2026-0042/1/purchase_order.pdf",
			SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Size: 48213},
		Event: notification.EventRef{ID: "evt_01JD3", Type: "order.placed", Source: "erp", Time: at, StoredAt: at},
		Order: &notification.OrderSummary{ID: "PO-2026-0042", Kind: event.KindPurchase, Revision: 1, IssuedAt: at, Currency: "EUR",
			Buyer: "Frutas del Sur S.L.", Supplier: "Молочная ферма «Заря»", Lines: 2,
			Totals: event.Totals{Net: "166.80", Tax: "16.68", Gross: "183.48"}},
		CreatedAt: at,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := notification.Decode(payload); err != nil {
			b.Fatal(err)
		}
	}
}
