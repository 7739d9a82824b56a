package email_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/templates"
)

// A tenant's template is rendered for a sample delivery before it is
// stored: one that does not parse, or does not run on what a template
// sees, is refused naming the part; one that does renders what the tenant
// wrote, with Herald's parts where it asks for them.
func TestATenantsTemplateIsCheckedByRenderingASample(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	good := templates.Template{Tenant: "acme", Name: "purchase_order", Locale: "es",
		Subject: "Pedido {{.Order.ID}} — {{.Order.Buyer}}",
		Text:    "Hola {{.Recipient.Name}}:\n\nAdjuntamos el pedido.\n{{template \"summary\" .}}{{template \"footer\" .}}",
		HTML:    `{{template "top" .}}<p>Hola {{.Recipient.Name}}, <b>pedido {{.Order.ID}}</b>.</p>{{template "bottom" .}}`}
	r, err := c.Check(good)
	require.NoError(t, err)
	require.Equal(t, "Pedido PO-2026-0042 — Frutas del Sur S.L.", r.Subject)
	require.Contains(t, r.Text, "Hola Olga Petrova:")
	require.Contains(t, r.Text, "183,48", "Herald's summary, in Spanish")
	require.Contains(t, r.HTML, "<b>pedido PO-2026-0042</b>")
	require.Contains(t, r.HTML, "<!doctype html>", "Herald's frame")

	for name, c2 := range map[string]struct {
		edit func(*templates.Template)
		want string
	}{
		"subject does not parse":                   {func(t *templates.Template) { t.Subject = "Pedido {{.Order.ID" }, "subject, text:"},
		"text runs into a field that is not there": {func(t *templates.Template) { t.Text = "{{.Order.Nope}}" }, "Nope"},
		"html does not parse":                      {func(t *templates.Template) { t.HTML = "<p>{{if .Order}}</p>" }, "html:"},
		"a template Herald does not have":          {func(t *templates.Template) { t.Name = "quote" }, `name: "quote" is not a template Herald has`},
	} {
		bad := good
		c2.edit(&bad)
		_, err := c.Check(bad)
		require.ErrorContains(t, err, c2.want, name)
	}

	shipped, err := c.Shipped("acme", "low_stock", "en")
	require.NoError(t, err)
	require.Contains(t, shipped.Text, "MILK-1L")
	_, err = c.Shipped("acme", "quote", "en")
	require.ErrorContains(t, err, "not a template Herald has")
}

// Every template of Herald's previews, and a tenant's own version of it is
// checked, on a sample with the data it is about: a workflow's reminder on
// the purchase order, as the purchase order's own template.
func TestEveryShippedTemplatePreviewsOnWhatItIsAbout(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	for _, name := range shippedTemplates {
		shipped, err := c.Shipped("acme", name, "es")
		require.NoError(t, err, name)
		require.NotEmpty(t, shipped.HTML, name)
	}
	reminder, err := c.Shipped("acme", "po_reminder", "ru")
	require.NoError(t, err)
	require.Equal(t, "Напоминание: заказ на закупку PO-2026-0042 от Frutas del Sur S.L. ждёт вашего подтверждения", reminder.Subject)
	require.Contains(t, reminder.Text, "Документ приложен в формате PDF.")

	own := templates.Template{Tenant: "acme", Name: "po_unconfirmed", Locale: "en",
		Subject: "Still waiting on {{.Order.Supplier}} for {{.Order.ID}}", Text: "{{template \"summary\" .}}"}
	r, err := c.Check(own)
	require.NoError(t, err)
	require.Equal(t, "Still waiting on Molochnaya Ferma Zarya for PO-2026-0042", r.Subject)
	require.Contains(t, r.Text, "Purchase order PO-2026-0042")
}

// Once stored, a tenant's template replaces Herald's for that tenant's
// recipients of its language (regions included), and no one else's; a
// template without HTML sends text only; removed, Herald's is back.
func TestATenantsTemplateReplacesHeraldsForItsRecipientsOnly(t *testing.T) {
	t.Parallel()
	n, ctx := heraldtest.StartNATSWithStreams(t), heraldtest.Context(t)
	store, err := templates.Open(ctx, n.JS)
	require.NoError(t, err)
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	customs, err := c.FollowCustoms(ctx, n.JS, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(customs.Stop)

	_, err = store.Put(ctx, templates.Template{Tenant: "acme", Name: "purchase_order", Locale: "es",
		Subject: "ACME: pedido {{.Order.ID}}", Text: "Texto propio de Acme."})
	require.NoError(t, err)
	compose := func(tenant, locale string) email.Message {
		d := purchaseOrder(locale, 1)
		d.Tenant = tenant
		m, err := c.Compose(d, email.Content{})
		require.NoError(t, err)
		return m
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, "ACME: pedido PO-2026-0042", compose("acme", "es-MX").Subject)
	}, 5*time.Second, 10*time.Millisecond)
	m := compose("acme", "es")
	require.Equal(t, "Texto propio de Acme.\n", m.Text)
	require.Empty(t, m.HTML, "no HTML of its own: text only, rather than Herald's saying something else")
	require.Equal(t, "Purchase order PO-2026-0042 from Frutas del Sur S.L.", compose("acme", "en").Subject, "another language: Herald's")
	require.Equal(t, "Pedido de compra PO-2026-0042 de Frutas del Sur S.L.", compose("globex", "es").Subject, "another tenant: Herald's")

	require.NoError(t, store.Delete(ctx, "acme", "purchase_order", "es"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.Equal(c, "Pedido de compra PO-2026-0042 de Frutas del Sur S.L.", compose("acme", "es").Subject)
	}, 5*time.Second, 10*time.Millisecond)
}

// Every part of a tenant's template is bounded, HTML too: the sample check
// refuses one that runs away, naming the part and the bound — a loop of
// four million steps (which, unbounded, would render after a while) or
// text written without end — and one nested too deep when it is parsed.
func TestEveryPartOfATenantsTemplateIsBounded(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	good := templates.Template{Tenant: "acme", Name: "purchase_order", Locale: "en",
		Subject: "Order {{.Order.ID}}", Text: "Hello.", HTML: "<p>Hello.</p>"}
	loop := `{{range 2000}}{{range 2000}}{{end}}{{end}}`
	flood := `{{range 100000}}` + strings.Repeat("<p>Frutas del Sur S.L.</p>", 40) + `{{end}}`
	for name, c2 := range map[string]struct {
		edit func(*templates.Template)
		want string
	}{
		"a loop in the subject": {func(t *templates.Template) { t.Subject += loop }, "rendering en/purchase_order.subject: template exceeded its work bound (20000 steps)"},
		"a loop in the text":    {func(t *templates.Template) { t.Text += loop }, "rendering en/purchase_order.body: template exceeded its work bound (20000 steps)"},
		"a loop in the html":    {func(t *templates.Template) { t.HTML += loop }, "rendering en/purchase_order.html: template exceeded its work bound (20000 steps)"},
		"a flood of html":       {func(t *templates.Template) { t.HTML += flood }, "rendering en/purchase_order.html: template exceeded its output bound (524288 bytes)"},
		"nested too deep": {func(t *templates.Template) {
			t.Text = strings.Repeat("{{if .Order}}", 17) + strings.Repeat("{{end}}", 17)
		},
			"subject, text: template purchase_order.body: {{if}}, {{range}}, {{with}} and parentheses nest more than 16 deep"},
	} {
		bad := good
		c2.edit(&bad)
		_, err := c.Check(bad)
		require.EqualError(t, err, c2.want, name)
	}
}

// Bounded, Herald's own templates render byte for byte as they do
// unbounded — every template and language, text and HTML, names to
// escape, with a link and without: paying for a render changes nothing it
// writes.
func TestHeraldsTemplatesRenderTheSameBounded(t *testing.T) {
	t.Parallel()
	c, err := email.NewComposer("Orders <orders@acme.example>")
	require.NoError(t, err)
	for _, template := range shippedTemplates {
		for _, locale := range []string{"en", "es", "ru", "de"} {
			for _, name := range []string{"Olga Petrova", "", `<script>alert("x")</script> & 'O'Brien'`} {
				for _, content := range []email.Content{
					{Attachments: []email.Attachment{{Filename: "x.pdf"}}},
					{Unsubscribe: `https://h.example/u?a=1&b="2"`, Link: "https://herald.example.com/v1/documents/x?sig=a&b",
						LinkExpires: time.Date(2026, 12, 9, 0, 0, 0, 0, time.UTC), Brand: email.Brand{LogoURL: "javascript:x", Colour: "red;x:y"}},
				} {
					d := templated(template, locale, 2, name)
					bounded, err := c.ComposeBounded(d, content)
					require.NoError(t, err)
					alone, err := c.ComposeAlone(d, content)
					require.NoError(t, err)
					bounded.Date, alone.Date = time.Time{}, time.Time{}
					require.Equal(t, alone, bounded, "%s %s name %q", template, locale, name)
				}
			}
		}
	}
}
