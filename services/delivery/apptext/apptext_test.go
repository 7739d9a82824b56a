package apptext_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/apptext"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

var locales = []string{"en", "es", "ru"}

func newComposer(t *testing.T) *apptext.Composer {
	t.Helper()
	c, err := apptext.New()
	require.NoError(t, err)
	return c
}

func order(template, locale string, revision int) notification.Delivery {
	currency := "EUR"
	if locale == "ru" {
		currency = "RUB"
	}
	return notification.Delivery{
		ID: "ntf_1", DedupeKey: "acme:PO-2026-0042:1:" + template + ":push:sub_1", Tenant: "acme",
		Channel: event.ChannelPush, Template: template, Locale: locale,
		Recipient: notification.Recipient{Address: "sub_1", Subscriber: "sub_1"},
		Order: &notification.OrderSummary{
			ID: "PO-2026-0042", Kind: event.KindPurchase, Revision: revision, Currency: currency,
			IssuedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
			Buyer:    "Frutas del Sur S.L.", Supplier: "Granja La Aurora S.L.", Lines: 2,
			Totals: event.Totals{Net: "1516.80", Tax: "151.68", Gross: "1668.48"},
		},
	}
}

func stock(sku, description string) *event.Stock {
	return &event.Stock{SKU: sku, Description: description, Warehouse: "SEV-01", OnHand: "1250.5", ReorderPoint: "2000", Unit: "kg"}
}

func lowStock(locale string) notification.Delivery {
	return notification.Delivery{
		ID: "ntf_2", DedupeKey: "acme:evt_1:0:low_stock:push:sub_1", Tenant: "acme",
		Channel: event.ChannelPush, Template: "low_stock", Locale: locale,
		Recipient: notification.Recipient{Address: "sub_1", Subscriber: "sub_1"},
		Stock:     stock("MILK-1L", "Whole milk 1 L"),
	}
}

func digestOf(locale string, n int) notification.Delivery {
	d := lowStock(locale)
	d.Template, d.Digest = "low_stock_digest", &notification.Digest{Count: n}
	for i := range n {
		d.Digest.Items = append(d.Digest.Items, notification.DigestItem{EventID: fmt.Sprint("evt_", i), Stock: stock(fmt.Sprint("SKU-", i), "")})
	}
	return d
}

// shipped is every notification template the text channels ship: what a
// route may name, and so what an app notification must say too.
func shipped(t *testing.T) []string {
	t.Helper()
	define := regexp.MustCompile(`define "([a-z_]+)\.(?:subject|text)"`)
	var names []string
	for _, file := range []string{"../email/templates/en.tmpl", "../sms/templates/en.tmpl"} {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range define.FindAllStringSubmatch(string(b), -1) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func delivery(name, locale string) notification.Delivery {
	switch name {
	case "low_stock":
		return lowStock(locale)
	case "low_stock_digest":
		return digestOf(locale, 3)
	}
	return order(name, locale, 2)
}

func TestEveryShippedTemplateRendersInEveryLocale(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	names := shipped(t)
	require.Subset(t, names, []string{"purchase_order", "sales_order", "delivery_note", "goods_received_note", "invoice", "low_stock", "low_stock_digest", "po_reminder", "po_unconfirmed"})
	for _, name := range names {
		require.True(t, c.Has(name), name)
		english, err := c.Compose(delivery(name, "en"))
		require.NoError(t, err, name)
		for _, locale := range locales {
			got, err := c.Compose(delivery(name, locale))
			require.NoError(t, err, "%s/%s", name, locale)
			require.NotEmpty(t, got.Title, "%s/%s", name, locale)
			require.NotEmpty(t, got.Body, "%s/%s", name, locale)
			require.NotContains(t, got.Title, "\n", "%s/%s", name, locale)
			require.NotContains(t, got.Title+got.Body, "<no value>", "%s/%s", name, locale)
			if locale != "en" {
				require.NotEqual(t, english.Title, got.Title, "%s/%s is not translated", name, locale)
			}
		}
	}
}

func TestComposeWritesTheRecipientsLanguage(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	for _, tc := range []struct {
		d    notification.Delivery
		want apptext.Text
	}{
		{order("delivery_note", "en", 1), apptext.Text{Title: "Order PO-2026-0042 shipped",
			Body: "Granja La Aurora S.L. shipped order PO-2026-0042 to Frutas del Sur S.L., total €1,668.48."}},
		{order("delivery_note", "es-MX", 3), apptext.Text{Title: "Pedido PO-2026-0042 (revisión 3) enviado",
			Body: "Granja La Aurora S.L. envió el pedido PO-2026-0042 a Frutas del Sur S.L., total 1.668,48\u00a0€."}},
		{lowStock("ru"), apptext.Text{Title: "Низкий остаток: MILK-1L, склад SEV-01",
			Body: "MILK-1L (Whole milk 1 L): 1\u00a0250,5 kg, точка заказа 2\u00a0000 kg."}},
		{digestOf("en", 12), apptext.Text{Title: "Low stock at SEV-01: 12 items",
			Body: "SKU-0: 1,250.5 kg\nSKU-1: 1,250.5 kg\nSKU-2: 1,250.5 kg\nSKU-3: 1,250.5 kg\nSKU-4: 1,250.5 kg\n" +
				"SKU-5: 1,250.5 kg\nSKU-6: 1,250.5 kg\nSKU-7: 1,250.5 kg\nSKU-8: 1,250.5 kg\nSKU-9: 1,250.5 kg\nand 2 more"}},
	} {
		got, err := c.Compose(tc.d)
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}

func TestHTMLLookingDataStaysText(t *testing.T) {
	t.Parallel()
	d := lowStock("en")
	d.Stock.SKU, d.Stock.Description = `<img src=x onerror="alert(1)">`, `Milk & <b>cream</b>`
	got, err := newComposer(t).Compose(d)
	require.NoError(t, err)
	require.Equal(t, `Low stock: <img src=x onerror="alert(1)"> at SEV-01`, got.Title)
	require.Equal(t, `<img src=x onerror="alert(1)"> (Milk & <b>cream</b>): 1,250.5 kg on hand, reorder point 2,000 kg.`, got.Body,
		"plain text goes as it came: whoever shows it as HTML escapes it there")
}

func TestComposeWrittenMessage(t *testing.T) {
	t.Parallel()
	d := order("purchase_order", "es", 1)
	d.Template, d.Message = "", &notification.Message{Subject: "Your order", Text: "It ships today.\nTracking follows.", HTML: "<p>ignored</p>"}
	got, err := newComposer(t).Compose(d)
	require.NoError(t, err)
	require.Equal(t, apptext.Text{Title: "Your order", Body: "It ships today.\nTracking follows."}, got)
}

func TestLongTextIsCut(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	for _, tc := range []struct{ title, body int }{{apptext.MaxTitle, apptext.MaxBody}, {apptext.MaxTitle + 1, apptext.MaxBody + 1}, {400, 5000}} {
		d := order("purchase_order", "ru", 1)
		d.Message = &notification.Message{Subject: strings.Repeat("Щ", tc.title), Text: strings.Repeat("ж", tc.body)}
		got, err := c.Compose(d)
		require.NoError(t, err)
		require.Equal(t, min(tc.title, apptext.MaxTitle), utf8.RuneCountInString(got.Title))
		require.Equal(t, min(tc.body, apptext.MaxBody), utf8.RuneCountInString(got.Body))
		require.Equal(t, tc.title > apptext.MaxTitle, strings.HasSuffix(got.Title, "…"), "title of %d", tc.title)
		require.Equal(t, tc.body > apptext.MaxBody, strings.HasSuffix(got.Body, "…"), "body of %d", tc.body)
	}
}

func TestComposeRefusesForGood(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	unknown := order("no_such_template", "en", 1)
	missing := order("invoice", "en", 1)
	missing.Order = nil
	empty := order("invoice", "en", 1)
	empty.Message = &notification.Message{Subject: " ", Text: "\n"}
	for _, d := range []notification.Delivery{unknown, missing, empty} {
		_, err := c.Compose(d)
		require.Error(t, err, d.Template)
		require.True(t, provider.IsPermanent(err), "%s: %v", d.Template, err)
	}
	require.False(t, c.Has("no_such_template"))
}
