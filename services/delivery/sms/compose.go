package sms

import (
	"bytes"
	"embed"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/heraldhq/herald/services/delivery/localized"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/money"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
)

//go:embed templates/*.tmpl
var templateFiles embed.FS

// MaxSegments is the longest SMS Compose lets through. Every segment is
// billed; a message this long is a mistake (a caller pasting a document),
// not a notification.
const MaxSegments = 10

// MaxWhatsAppChars is the longest WhatsApp body: what Twilio accepts in a
// message Body, well under WhatsApp's own limit. WhatsApp has no segments.
const MaxWhatsAppChars = 1600

// Composer renders deliveries into text messages. Templates are parsed
// once; a Composer is safe for concurrent use.
type Composer struct {
	templates localized.Templates
}

// NewComposer parses the embedded templates.
func NewComposer() (*Composer, error) {
	templates, err := localized.Parse(templateFiles, "templates/*.tmpl", funcs)
	if err != nil {
		return nil, err
	}
	return &Composer{templates: templates}, nil
}

// Has reports whether a notification template exists (in the default
// locale, which every other locale falls back to).
func (c *Composer) Has(name string) bool {
	return c.templates.Has(name + ".text")
}

// Compose renders d in its recipient's language, falling back to English
// for a locale or template a language lacks; a delivery its caller wrote
// is sent as written. The message is sent as plain text on d.Channel —
// for WhatsApp, only inside a session window (see ComposeWhatsApp).
//
// An unknown template, and a message longer than MaxSegments (SMS) or
// MaxWhatsAppChars, are permanent errors: retrying cannot help.
func (c *Composer) Compose(d notification.Delivery) (Message, error) {
	body, err := c.body(d)
	if err != nil {
		return Message{}, err
	}
	if err := checkLength(d.Channel, body); err != nil {
		return Message{}, err
	}
	return Message{
		ID: d.ID, DedupeKey: d.DedupeKey, Tenant: d.Tenant,
		Channel: d.Channel, To: d.Recipient.Address, Body: body,
	}, nil
}

// body is the caller's text as written (a text message has no subject),
// or the template rendered on one line.
func (c *Composer) body(d notification.Delivery) (string, error) {
	if d.Message != nil {
		return d.Message.Text, nil
	}
	t := c.templates.Pick(d.Locale, d.Template+".text")
	if t == nil {
		return "", provider.Permanentf("no text message template %q", d.Template)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, d.Template+".text", localized.DataOf(d)); err != nil {
		return "", provider.Permanentf("rendering %s/%s: %w", t.Name(), d.Template, err)
	}
	return collapse(buf.String()), nil
}

// WithPreferences is m, to a subscriber, with a last line linking their
// preference page — "Preferences: <link>" in their language — unless
// that line would make m longer than its channel allows (MaxSegments,
// MaxWhatsAppChars): then m goes without it, as a message is worth more
// than its link. An approved WhatsApp template is sent as approved.
func (c *Composer) WithPreferences(m Message, locale, link string) Message {
	if m.Template != nil || link == "" {
		return m
	}
	label := "Preferences:"
	if t := c.templates.Pick(locale, "preferences"); t != nil {
		var buf bytes.Buffer
		if t.ExecuteTemplate(&buf, "preferences", nil) == nil {
			label = collapse(buf.String())
		}
	}
	body := m.Body + "\n" + label + " " + link
	if checkLength(m.Channel, body) != nil {
		return m
	}
	m.Body = body
	return m
}

// collapse puts text on one line with single spaces: a phone wraps a text
// message itself, so the templates' line breaks and indentation would
// only cost characters. It also turns the no-break spaces money writes
// ("183,48 €") into plain ones, which GSM-7 has and a no-break space
// would force the whole message into UCS-2 for.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// checkLength refuses a message longer than its channel allows.
func checkLength(c event.Channel, body string) error {
	if strings.TrimSpace(body) == "" {
		return provider.Permanentf("empty text message")
	}
	if c == event.ChannelWhatsApp {
		if n := utf8.RuneCountInString(body); n > MaxWhatsAppChars {
			return provider.Permanentf("whatsapp message is %d characters, more than the %d allowed", n, MaxWhatsAppChars)
		}
		return nil
	}
	if enc, n := Segments(body); n > MaxSegments {
		return provider.Permanentf("text message is %d segments (%s), more than the %d allowed", n, enc, MaxSegments)
	}
	return nil
}

func funcs(locale string) template.FuncMap {
	return template.FuncMap{
		"money":    func(amount event.Decimal, currency string) string { return formatMoney(amount, currency, locale) },
		"quantity": func(amount event.Decimal, unit string) string { return quantity(amount, unit, locale) },
	}
}

// formatMoney writes an amount as the email and the PDF do ("€1,234.50",
// "1.234,50 €"), never rounding; an amount that is not a decimal is
// written as it came.
func formatMoney(amount event.Decimal, currency, locale string) string {
	if !amount.Valid() {
		return string(amount) + " " + currency
	}
	return money.StyleOf(locale).Money(string(amount), currency, money.Symbols)
}

// quantity writes a stock level in the language's digits ("1.250,5 kg"),
// with its unit when there is one.
func quantity(amount event.Decimal, unit, locale string) string {
	n := string(amount)
	if amount.Valid() {
		n = money.StyleOf(locale).Number(n, 0)
	}
	if unit == "" {
		return n
	}
	return n + " " + unit
}
