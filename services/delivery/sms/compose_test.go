package sms_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

// parties are sample buyers and suppliers as each language's tenants
// name them.
var parties = map[string][2]string{
	"en": {"Frutas del Sur S.L.", "Granja La Aurora S.L."},
	"es": {"Frutas del Sur S.L.", "Granja La Aurora S.L."},
	"ru": {"ООО «Фрукты Юга»", "Молочная ферма «Заря»"},
}

func order(template, locale string, revision int, gross event.Decimal) notification.Delivery {
	p := parties[locale]
	if p[0] == "" {
		p = parties["en"]
	}
	currency := "EUR"
	if locale == "ru" {
		currency = "RUB"
	}
	return notification.Delivery{
		ID: "ntf_1", DedupeKey: "acme:PO-2026-0042:1:" + template + ":sms:+34600111222", Tenant: "acme",
		Channel: event.ChannelSMS, Priority: notification.PriorityNormal,
		Recipient: notification.Recipient{Name: "Olga Petrova", Role: "supplier", Address: "+34600111222"},
		Template:  template, Locale: locale, Document: &notification.Document{Type: template},
		Order: &notification.OrderSummary{
			ID: "PO-2026-0042", Kind: event.KindPurchase, Revision: revision, Currency: currency,
			IssuedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
			Buyer:    p[0], Supplier: p[1], Lines: 2,
			Totals: event.Totals{Net: "166.80", Tax: "16.68", Gross: gross},
		},
	}
}

// reminder is the purchase order's reminder, a step of its workflow.
func reminder(locale string, revision int) notification.Delivery {
	d := order("purchase_order", locale, revision, "183.48")
	d.Template = "po_reminder"
	return d
}

var descriptions = map[string][2]string{
	"en": {"Whole milk 1 L", "pcs"},
	"es": {"Leche entera 1 L", "ud"},
	"ru": {"Молоко 3,2% 1 л", "шт"},
}

func lowStock(locale string) notification.Delivery {
	desc := descriptions[locale]
	return notification.Delivery{
		ID: "ntf_2", DedupeKey: "acme:evt_1:0:low_stock:sms:+34600111222", Tenant: "acme",
		Channel: event.ChannelSMS, Template: "low_stock", Locale: locale,
		Recipient: notification.Recipient{Address: "+34600111222"},
		Stock: &event.Stock{
			SKU: "MILK-1L", Description: desc[0], Warehouse: "SEV-01",
			OnHand: "14", ReorderPoint: "50", Unit: desc[1],
		},
	}
}

func newComposer(t *testing.T) *sms.Composer {
	t.Helper()
	c, err := sms.NewComposer()
	require.NoError(t, err)
	return c
}

func TestComposeLanguages(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	tests := []struct {
		name string
		d    notification.Delivery
		body string
	}{
		{"en purchase order", order("purchase_order", "en", 1, "183.48"),
			"Purchase order PO-2026-0042 from Frutas del Sur S.L., total €183.48. Document sent by email."},
		{"en revision", order("invoice", "en", 2, "1234.5"),
			"Invoice for order PO-2026-0042 (revision 2) from Granja La Aurora S.L., total €1,234.50. Invoice sent by email."},
		{"es money with a plain space", order("sales_order", "es", 3, "1234.5"),
			"Pedido de venta PO-2026-0042 (rev. 3) de Granja La Aurora S.L., total 1.234,50 €. Documento enviado por correo."},
		{"ru", order("goods_received_note", "ru", 1, "183.48"),
			"Заказ PO-2026-0042 получен покупателем ООО «Фрукты Юга», сумма 183,48 ₽. Акт приёмки отправлен по эл. почте."},
		{"es low stock", lowStock("es"),
			"Stock bajo: MILK-1L (Leche entera 1 L) en SEV-01: quedan 14 ud, punto de pedido 50 ud."},
		{"ru low stock", lowStock("ru"),
			"Низкий остаток: MILK-1L (Молоко 3,2% 1 л), склад SEV-01: 14 шт, точка заказа 50 шт."},
		{"es-MX falls back to es", order("delivery_note", "es-MX", 1, "183.48"),
			"Pedido PO-2026-0042 enviado por Granja La Aurora S.L., total 183,48 €. Nota de entrega enviada por correo."},
		{"unknown language falls back to en", order("delivery_note", "de", 1, "183.48"),
			"Order PO-2026-0042 shipped by Granja La Aurora S.L., total €183.48. Delivery note sent by email."},
		{"no locale is en", order("purchase_order", "", 1, "183.48"),
			"Purchase order PO-2026-0042 from Frutas del Sur S.L., total €183.48. Document sent by email."},
		{"en reminder", reminder("en", 1),
			"Reminder: purchase order PO-2026-0042 from Frutas del Sur S.L., total €183.48, awaits your confirmation."},
		{"es reminder", reminder("es", 2),
			"Recordatorio: el pedido de compra PO-2026-0042 (rev. 2) de Frutas del Sur S.L., total 183,48 €, sigue pendiente de confirmar."},
		{"ru reminder", reminder("ru", 1),
			"Напоминание: заказ на закупку PO-2026-0042 от ООО «Фрукты Юга», сумма 183,48 ₽, ждёт вашего подтверждения."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := c.Compose(tt.d)
			require.NoError(t, err)
			require.Equal(t, tt.body, m.Body)
			require.Equal(t, sms.Message{
				ID: tt.d.ID, DedupeKey: tt.d.DedupeKey, Tenant: "acme",
				Channel: event.ChannelSMS, To: "+34600111222", Body: tt.body,
			}, m)
		})
	}
}

func TestComposeLowStockWithoutOptionalFields(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	d := lowStock("en")
	d.Stock.Description, d.Stock.ReorderPoint, d.Stock.Unit = "", "", ""
	d.Stock.OnHand = "1250.5"
	m, err := c.Compose(d)
	require.NoError(t, err)
	require.Equal(t, "Low stock: MILK-1L at SEV-01: 1,250.5 on hand.", m.Body)

	d.Locale, d.Stock.Unit = "es", "kg"
	m, err = c.Compose(d)
	require.NoError(t, err)
	require.Equal(t, "Stock bajo: MILK-1L en SEV-01: quedan 1.250,5 kg.", m.Body)
}

// What a text message costs is what a tenant pays: English and Spanish
// messages stay in one GSM-7 segment, Russian in two UCS-2 segments,
// even at a revision and a six-figure total.
func TestComposeFitsItsSegments(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	want := map[string]struct {
		encoding sms.Encoding
		max      int
	}{"en": {sms.GSM7, 1}, "es": {sms.GSM7, 1}, "ru": {sms.UCS2, 2}}
	for locale, w := range want {
		long := reminder(locale, 12)
		long.Order.Totals.Gross = "123456.78"
		deliveries := []notification.Delivery{lowStock(locale), long}
		for _, doc := range notification.DocumentTypes {
			deliveries = append(deliveries, order(doc, locale, 12, "123456.78"))
		}
		for _, d := range deliveries {
			t.Run(locale+"/"+d.Template, func(t *testing.T) {
				t.Parallel()
				m, err := c.Compose(d)
				require.NoError(t, err)
				encoding, segments := sms.Segments(m.Body)
				require.Equal(t, w.encoding, encoding, m.Body)
				require.LessOrEqual(t, segments, w.max, "%s: %q", sms.Describe(m.Body), m.Body)
			})
		}
	}
}

func TestComposeTemplates(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	for _, name := range slices.Concat(notification.DocumentTypes, []string{"low_stock", "po_reminder"}) {
		require.True(t, c.Has(name), name)
	}
	require.False(t, c.Has("quote"))
	require.False(t, c.Has("revision"), "a helper template is not a notification")

	d := order("purchase_order", "en", 1, "183.48")
	d.Template = "quote"
	_, err := c.Compose(d)
	require.True(t, provider.IsPermanent(err), "got %v", err)
	require.ErrorContains(t, err, `"quote"`)
}

// A delivery missing the data its template needs cannot be rendered on any
// retry.
func TestComposeMissingDataIsPermanent(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	d := order("invoice", "es", 1, "183.48")
	d.Order = nil
	_, err := c.Compose(d)
	require.True(t, provider.IsPermanent(err), "got %v", err)
}

// A caller's own message goes as written: its line breaks kept, its
// subject dropped (a text message has none), no template consulted.
func TestComposeWrittenMessage(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	d := order("purchase_order", "ru", 1, "183.48")
	d.Template, d.Order, d.Document = "", nil, nil
	d.Channel = event.ChannelWhatsApp
	d.Message = &notification.Message{Subject: "Ваш заказ готов", Text: "Заберите до пятницы.\nСклад SEV-01", HTML: "<p>x</p>"}
	m, err := c.Compose(d)
	require.NoError(t, err)
	require.Equal(t, sms.Message{
		ID: "ntf_1", DedupeKey: d.DedupeKey, Tenant: "acme",
		Channel: event.ChannelWhatsApp, To: "+34600111222", Body: "Заберите до пятницы.\nСклад SEV-01",
	}, m)
}

func TestComposeLengthLimits(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	tests := []struct {
		name    string
		channel event.Channel
		text    string
		refused string // in the error; "" when sent
	}{
		{"sms at the limit", event.ChannelSMS, strings.Repeat("a", 153*sms.MaxSegments), ""},
		{"sms one segment over", event.ChannelSMS, strings.Repeat("a", 153*sms.MaxSegments+1), "11 segments (gsm-7)"},
		{"ucs-2 sms over", event.ChannelSMS, strings.Repeat("ж", 67*sms.MaxSegments+1), "11 segments (ucs-2)"},
		{"whatsapp has no segments", event.ChannelWhatsApp, strings.Repeat("ж", sms.MaxWhatsAppChars), ""},
		{"whatsapp over", event.ChannelWhatsApp, strings.Repeat("ж", sms.MaxWhatsAppChars+1), "1601 characters"},
		{"blank", event.ChannelSMS, " \n ", "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := lowStock("en")
			d.Channel, d.Template = tt.channel, ""
			d.Message = &notification.Message{Subject: "s", Text: tt.text}
			m, err := c.Compose(d)
			if tt.refused == "" {
				require.NoError(t, err)
				require.Equal(t, tt.text, m.Body)
				return
			}
			require.True(t, provider.IsPermanent(err), "got %v", err)
			require.ErrorContains(t, err, tt.refused)
		})
	}
}

// digestOf is a low-stock digest of n SKUs of one warehouse.
func digestOf(locale string, n int) notification.Delivery {
	d := lowStock(locale)
	d.Template = "low_stock_digest"
	d.Digest = &notification.Digest{Count: n}
	for i := range n {
		s := *d.Stock
		s.SKU = fmt.Sprintf("SKU-%02d", i)
		d.Digest.Items = append(d.Digest.Items, notification.DigestItem{EventID: fmt.Sprintf("evt_%d", i), Stock: &s})
	}
	return d
}

// A digest's text names its count and lists the first ten items, within
// a few segments however many it gathered, in every language.
func TestComposeADigest(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	for _, locale := range []string{"en", "es", "ru"} {
		m, err := c.Compose(digestOf(locale, 3))
		require.NoError(t, err, locale)
		for _, sku := range []string{"SKU-00", "SKU-01", "SKU-02"} {
			require.Contains(t, m.Body, sku, locale)
		}
		require.Contains(t, m.Body, "SEV-01", locale)
		require.Contains(t, m.Body, "3", locale)
		many, err := c.Compose(digestOf(locale, 50))
		require.NoError(t, err, "fifty items still fit: %s", locale)
		require.Contains(t, many.Body, "50", locale)
		require.Contains(t, many.Body, "SKU-09", locale)
		require.NotContains(t, many.Body, "SKU-10", "ten listed: %s", locale)
	}
}
