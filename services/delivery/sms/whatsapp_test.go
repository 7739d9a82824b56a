package sms_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/sms"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

func whatsApp(d notification.Delivery) notification.Delivery {
	d.Channel = event.ChannelWhatsApp
	return d
}

func TestComposeWhatsApp(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	templates := sms.Templates{
		"low_stock":      {ContentSID: "HXstock", Variables: []string{"sku", "description", "warehouse", "on_hand", "reorder_point"}},
		"low_stock/es":   {ContentSID: "HXstock_es", Variables: []string{"warehouse", "sku", "on_hand"}},
		"purchase_order": {ContentSID: "HXpo", Variables: []string{"recipient_name", "document", "order_id", "counterparty", "total", "revision"}},
		"invoice/ru":     {ContentSID: "HXinv_ru", Variables: []string{"document", "order_id", "counterparty", "buyer", "supplier", "total"}},
		"sales_order":    {Variables: []string{"order_id"}}, // awaiting approval: no ContentSID
		"po_reminder/ru": {ContentSID: "HXrem_ru", Variables: []string{"order_id", "buyer", "total"}},
	}
	noDescription := lowStock("en")
	noDescription.Stock.Description, noDescription.Stock.ReorderPoint = "", ""
	multiline := order("purchase_order", "en", 1, "183.48")
	multiline.Recipient.Name = "Olga\n\tPetrova"
	written := whatsApp(lowStock("en"))
	written.Template, written.Message = "", &notification.Message{Subject: "s", Text: "Call me"}

	tests := []struct {
		name     string
		d        notification.Delivery
		template *sms.Template // nil: sent free-form
	}{
		{"variables in order", whatsApp(lowStock("en")), &sms.Template{ContentSID: "HXstock", Variables: map[string]string{
			"1": "MILK-1L", "2": "Whole milk 1 L", "3": "SEV-01", "4": "14 pcs", "5": "50 pcs",
		}}},
		{"the language's own template", whatsApp(lowStock("es")), &sms.Template{ContentSID: "HXstock_es", Variables: map[string]string{
			"1": "SEV-01", "2": "MILK-1L", "3": "14 ud",
		}}},
		{"base language's template for a regional locale", whatsApp(withLocale(lowStock("es"), "es-MX")), &sms.Template{ContentSID: "HXstock_es", Variables: map[string]string{
			"1": "SEV-01", "2": "MILK-1L", "3": "14 ud",
		}}},
		{"the template without a language otherwise", whatsApp(lowStock("ru")), &sms.Template{ContentSID: "HXstock", Variables: map[string]string{
			"1": "MILK-1L", "2": "Молоко 3,2% 1 л", "3": "SEV-01", "4": "14 шт", "5": "50 шт",
		}}},
		{"missing values are a dash", whatsApp(noDescription), &sms.Template{ContentSID: "HXstock", Variables: map[string]string{
			"1": "MILK-1L", "2": "-", "3": "SEV-01", "4": "14 pcs", "5": "-",
		}}},
		{"a purchase order comes from the buyer", whatsApp(order("purchase_order", "es", 2, "1234.5")), &sms.Template{ContentSID: "HXpo", Variables: map[string]string{
			"1": "Olga Petrova", "2": "Pedido de compra", "3": "PO-2026-0042", "4": "Frutas del Sur S.L.", "5": "1.234,50 €", "6": "2",
		}}},
		{"values on one line", whatsApp(multiline), &sms.Template{ContentSID: "HXpo", Variables: map[string]string{
			"1": "Olga Petrova", "2": "Purchase order", "3": "PO-2026-0042", "4": "Frutas del Sur S.L.", "5": "€183.48", "6": "1",
		}}},
		{"an invoice comes from the supplier", whatsApp(order("invoice", "ru", 1, "183.48")), &sms.Template{ContentSID: "HXinv_ru", Variables: map[string]string{
			"1": "Счёт", "2": "PO-2026-0042", "3": "Молочная ферма «Заря»", "4": "ООО «Фрукты Юга»", "5": "Молочная ферма «Заря»", "6": "183,48 ₽",
		}}},
		{"a workflow's reminder, approved", whatsApp(reminder("ru", 1)), &sms.Template{ContentSID: "HXrem_ru", Variables: map[string]string{
			"1": "PO-2026-0042", "2": "ООО «Фрукты Юга»", "3": "183,48 ₽",
		}}},
		{"a workflow's reminder, free-form", whatsApp(reminder("es", 1)), nil},
		{"not approved yet", whatsApp(order("sales_order", "en", 1, "183.48")), nil},
		{"not configured", whatsApp(order("delivery_note", "en", 1, "183.48")), nil},
		{"an invoice in another language than the template's", whatsApp(order("invoice", "en", 1, "183.48")), nil},
		{"written by its caller", written, nil},
		{"sms never takes a template", lowStock("en"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			plain, err := c.Compose(tt.d)
			require.NoError(t, err)
			m, err := c.ComposeWhatsApp(tt.d, templates)
			require.NoError(t, err)
			require.Equal(t, tt.template, m.Template)
			m.Template = nil
			require.Equal(t, plain, m, "the rest, Body included, is what Compose makes")
		})
	}
}

func withLocale(d notification.Delivery, locale string) notification.Delivery {
	d.Locale = locale
	return d
}

func TestComposeWhatsAppUnknownVariable(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	templates := sms.Templates{"low_stock": {ContentSID: "HXstock", Variables: []string{"sku", "stock_level"}}}
	_, err := c.ComposeWhatsApp(whatsApp(lowStock("en")), templates)
	require.True(t, provider.IsPermanent(err), "got %v", err)
	require.ErrorContains(t, err, `"stock_level"`)
}

func TestComposeWhatsAppKeepsComposeErrors(t *testing.T) {
	t.Parallel()
	c := newComposer(t)
	d := whatsApp(lowStock("en"))
	d.Template = "quote"
	_, err := c.ComposeWhatsApp(d, sms.Templates{"quote": {ContentSID: "HXq"}})
	require.True(t, provider.IsPermanent(err), "got %v", err)
}

func TestTemplatesValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, sms.Templates{
		"low_stock":     {ContentSID: "HX1", Variables: []string{"sku", "warehouse"}},
		"invoice/es":    {ContentSID: "HX2", Variables: []string{"total"}},
		"delivery_note": {},
	}.Validate())
	require.NoError(t, sms.Templates(nil).Validate())

	err := sms.Templates{
		"low_stock": {ContentSID: "HX1", Variables: []string{"sku", "qty"}},
		"invoice":   {ContentSID: "HX2", Variables: []string{"amount"}},
	}.Validate()
	require.ErrorContains(t, err, `whatsapp template invoice: unknown variable "amount"`)
	require.ErrorContains(t, err, `whatsapp template low_stock: unknown variable "qty"`)
}
