package email_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

func purchaseOrder(locale string, revision int) notification.Delivery {
	return notification.Delivery{
		ID: "ntf_1", DedupeKey: "acme:PO-2026-0042:1:purchase_order:email:olga@zarya.example", Tenant: "acme",
		Channel: event.ChannelEmail, Priority: notification.PriorityNormal,
		Recipient: notification.Recipient{Name: "Ольга Петрова", Role: "supplier", Address: "olga@zarya.example"},
		Template:  "purchase_order", Locale: locale, Document: &notification.Document{Type: "purchase_order"},
		Order: &notification.OrderSummary{
			ID: "PO-2026-0042", Kind: event.KindPurchase, Revision: revision, Currency: "EUR",
			IssuedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
			Buyer:    "Frutas del Sur S.L.", Supplier: "Молочная ферма «Заря»", Lines: 2,
			Totals: event.Totals{Net: "166.80", Tax: "16.68", Gross: "183.48"},
		},
	}
}

func TestComposeLanguages(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	tests := []struct {
		locale   string
		revision int
		subject  string
		body     []string
	}{
		{"ru", 1, "Заказ на закупку PO-2026-0042 от Frutas del Sur S.L.",
			[]string{"Здравствуйте, Ольга Петрова!", "Итого:       183,48\u00a0€", "Дата:        2026-11-30"}},
		{"es", 1, "Pedido de compra PO-2026-0042 de Frutas del Sur S.L.",
			[]string{"Hola, Ольга Петрова:", "Total:      183,48\u00a0€"}},
		{"en", 2, "Purchase order PO-2026-0042 (revision 2) from Frutas del Sur S.L.",
			[]string{"This is revision 2; it replaces every earlier version.", "Total:    €183.48"}},
		{"es-MX", 1, "Pedido de compra PO-2026-0042 de Frutas del Sur S.L.", nil},
		{"de", 1, "Purchase order PO-2026-0042 from Frutas del Sur S.L.", nil},
		{"", 1, "Purchase order PO-2026-0042 from Frutas del Sur S.L.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			t.Parallel()
			m, err := c.Compose(purchaseOrder(tt.locale, tt.revision), email.Content{})
			require.NoError(t, err)
			require.Equal(t, tt.subject, m.Subject)
			for _, want := range tt.body {
				require.Contains(t, m.Text, want)
			}
			require.Equal(t, "olga@zarya.example", m.To)
			require.Equal(t, "ntf_1@acme.example", m.MessageID())
			require.NotContains(t, m.Text, "<no value>")
			require.NotContains(t, m.Text, "\n\n\n", "no runs of blank lines")
		})
	}
}

func TestComposeStockAlert(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	m, err := c.Compose(notification.Delivery{
		ID: "ntf_2", Tenant: "acme", Template: "low_stock", Locale: "es",
		Recipient: notification.Recipient{Address: "almacen@acme.example"},
		Stock:     &event.Stock{SKU: "MILK-1L", Warehouse: "SEV-01", OnHand: "14", ReorderPoint: "50", Unit: "ud"},
	}, email.Content{})
	require.NoError(t, err)
	require.Equal(t, "Stock bajo: MILK-1L en SEV-01", m.Subject)
	require.Contains(t, m.Text, "14 ud disponibles, punto de pedido 50")
}

func TestComposeUnknownTemplateIsPermanent(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	d := purchaseOrder("en", 1)
	d.Template = "quote"
	_, err = c.Compose(d, email.Content{})
	require.True(t, provider.IsPermanent(err), "got %v", err)
	require.False(t, c.Has("quote"))
	for _, name := range shippedTemplates {
		require.True(t, c.Has(name), name)
	}
}

func TestFormatMoney(t *testing.T) {
	t.Parallel()
	tests := []struct {
		amount          event.Decimal
		currency, local string
		want            string
	}{
		{"183.48", "EUR", "en", "€183.48"},
		{"1234567.5", "USD", "en", "$1,234,567.50"},
		{"-12", "GBP", "en", "-£12.00"},
		{"1234.50", "EUR", "es", "1.234,50\u00a0€"},
		{"1234.50", "RUB", "ru", "1\u00a0234,50\u00a0₽"},
		{"0.125", "EUR", "en", "€0.125"},
		{"99", "CHF", "en", "99.00\u00a0CHF"},
		{"12.3", "EUR", "fr", "€12.30"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, email.FormatMoney(tt.amount, tt.currency, tt.local), "%s %s %s", tt.amount, tt.currency, tt.local)
	}
}

func TestComposeSaysWhetherTheDocumentIsAttachedOrLinked(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	attached, err := c.Compose(purchaseOrder("es", 1), email.Content{Attachments: []email.Attachment{{Filename: "a.pdf", Data: []byte("%PDF")}}})
	require.NoError(t, err)
	require.Contains(t, attached.Text, "Adjuntamos el documento en PDF.")
	require.Len(t, attached.Attachments, 1)

	expires := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	linked, err := c.Compose(purchaseOrder("ru", 1), email.Content{Link: "https://herald.example/v1/documents/x.pdf?sig=1", LinkExpires: expires})
	require.NoError(t, err)
	require.Contains(t, linked.Text, "Документ слишком велик для вложения. Скачайте его (ссылка действует до 2026-12-07):\nhttps://herald.example/v1/documents/x.pdf?sig=1")
	require.Empty(t, linked.Attachments)
	require.NotContains(t, linked.Text, "приложен")
}

// A delivery with its caller's message is sent as written — no template,
// even one its template name would find — with its attachments.
func TestComposeWrittenMessage(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	d := purchaseOrder("ru", 1)
	d.Template, d.Order, d.Document = "", nil, nil
	d.Message = &notification.Message{Subject: "Ваш  заказ\nготов", Text: "Заберите до пятницы.\n", HTML: "<p>Заберите до <b>пятницы</b>.</p>"}
	pdf := email.Attachment{Filename: "terms.pdf", ContentType: "application/pdf", Data: []byte("%PDF")}
	m, err := c.Compose(d, email.Content{Attachments: []email.Attachment{pdf}})
	require.NoError(t, err)
	require.Equal(t, "Ваш заказ готов", m.Subject)
	require.Equal(t, d.Message.Text, m.Text)
	require.Equal(t, d.Message.HTML, m.HTML)
	require.Equal(t, []email.Attachment{pdf}, m.Attachments)
	require.Equal(t, "olga@zarya.example", m.To)
	require.Equal(t, "Orders <orders@acme.example>", m.From)
}

// A digest's email lists every item it gathered, in text and HTML.
func TestComposeADigest(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	for _, locale := range []string{"en", "es", "ru"} {
		d := notification.Delivery{ID: "ntf_3", Tenant: "acme", Template: "low_stock_digest", Locale: locale,
			Recipient: notification.Recipient{Address: "almacen@acme.example"},
			Stock:     &event.Stock{SKU: "SKU-00", Warehouse: "SEV-01", OnHand: "14", Unit: "ud"},
			Digest:    &notification.Digest{Count: 20}}
		for i := range 20 {
			d.Digest.Items = append(d.Digest.Items, notification.DigestItem{
				Stock: &event.Stock{SKU: fmt.Sprintf("SKU-%02d", i), Warehouse: "SEV-01", OnHand: "14", Unit: "ud"}})
		}
		m, err := c.Compose(d, email.Content{})
		require.NoError(t, err, locale)
		require.Contains(t, m.Subject, "SEV-01", locale)
		require.Contains(t, m.Subject, "20", locale)
		for i := range 20 {
			require.Contains(t, m.Text, fmt.Sprintf("SKU-%02d", i), locale)
			require.Contains(t, m.HTML, fmt.Sprintf("<strong>SKU-%02d</strong>", i), locale)
		}
		// A second digest of other items renders its own, not the first's.
		d.Digest.Items[0].Stock = &event.Stock{SKU: "OTHER-1", Warehouse: "SEV-01"}
		other, err := c.Compose(d, email.Content{})
		require.NoError(t, err)
		require.Contains(t, other.Text, "OTHER-1", locale)
	}
}
